package dashboard

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine/grouprec"
)

func TestHandler_Stream(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(New(f.e, ""))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/ui/events/stream", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); res.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("stream = %d %q", res.StatusCode, ct)
	}
	if _, err := f.e.Checkpoint(f.ctx, f.src.Run.ID, "after-stream"); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data:") {
			if !strings.Contains(line, `"kind":"checkpoint"`) {
				t.Fatalf("first event sent = %s, want the new checkpoint only", line)
			}
			return
		}
	}
	t.Fatalf("the stream ended without the new event: %v", sc.Err())
}

// TestHandler_StreamReport checks that a group page's stream says when
// the group's fork-run report changes, though no event is logged.
func TestHandler_StreamReport(t *testing.T) {
	f := newFixture(t)
	f.writeReport(f.runningReport())
	stamp := grouprec.Open(f.e.Layout().Group(f.src.Workspace.ID, f.fork.Group.ID)).Seq()
	srv := httptest.NewServer(New(f.e, ""))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := fmt.Sprintf("%s/ui/events/stream?group=%s&report=%d", srv.URL, f.fork.Group.ID, stamp)
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	quiet := time.After(3 * pollEvery)
	for quiet != nil {
		select {
		case l := <-lines:
			if strings.HasPrefix(l, "event:") {
				t.Fatalf("the stream sent %q before the report changed", l)
			}
		case <-quiet:
			quiet = nil
		}
	}
	f.writeReport(f.finishedReport())
	for l := range lines {
		if l == "event: report" {
			if data := <-lines; !strings.Contains(data, `"group":"`+f.fork.Group.ID+`"`) {
				t.Fatalf("report event data = %q", data)
			}
			return
		}
	}
	t.Fatal("the stream ended without a report event")
}
