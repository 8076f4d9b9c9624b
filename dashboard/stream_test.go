package dashboard

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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
