//go:build linux

package httpapi_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine/httpapi"
)

// A body over its route's bound is refused (413, code invalid); a route
// that takes lists of paths takes more.
func TestAPI_BodyBounds(t *testing.T) {
	srv, _ := newAPI(t, "")
	big := fmt.Sprintf(`{"label": %q}`, strings.Repeat("x", 100<<10))
	var e httpapi.Error
	if code := call(t, srv, "POST", "/v1/runs/source/checkpoint", "", big, &e); code != 413 || e.Code != "invalid" || !strings.Contains(e.Error, "larger than") {
		t.Errorf("a 100 KiB checkpoint = %d %+v, want 413 invalid", code, e)
	}
	paths := make([]string, 5000)
	for i := range paths {
		paths[i] = fmt.Sprintf("dir/file-%05d.txt", i)
	}
	if code := call(t, srv, "POST", "/v1/runs/source/merge", "", httpapi.MergeRequest{Paths: paths, DryRun: true}, &e); code == 413 {
		t.Errorf("a merge of 5000 paths = 413 %+v", e)
	}
}

// ask sends raw on a new connection to sock and returns the status line of
// the answer, waiting at most d.
func ask(t *testing.T, sock, raw string, d time.Duration) string {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	io.WriteString(c, raw)
	c.SetReadDeadline(time.Now().Add(d))
	line, _ := bufio.NewReader(c).ReadString('\n')
	return line
}

// A body framed by Transfer-Encoding is refused, with or without a
// Content-Length beside it.
func TestServer_TransferEncodingRefused(t *testing.T) {
	_, e := newAPI(t, "")
	sock := unixSocket(t, httpapi.NewHTTPServer(httpapi.New(e, ""), httpapi.DefaultTimeouts, httpapi.ConnContext))
	for _, cl := range []string{"", "Content-Length: 13\r\n"} {
		raw := "POST /v1/runs/source/checkpoint HTTP/1.1\r\nHost: tine\r\n" + cl + "Transfer-Encoding: chunked\r\n\r\nd\r\n{\"label\":\"x\"}\r\n0\r\n\r\n"
		if got := ask(t, sock, raw, 5*time.Second); !strings.Contains(got, " 400 ") {
			t.Errorf("chunked with %q: %q, want 400", cl, got)
		}
	}
}

// Past its share of connections a peer's next one is answered 503 and
// closed at once; one closed frees its place.
func TestConnLimiter_PerPeer(t *testing.T) {
	_, e := newAPI(t, "")
	srv := httpapi.NewHTTPServer(httpapi.New(e, ""), httpapi.DefaultTimeouts, httpapi.ConnContext)
	sock := unixSocket(t, srv, httpapi.NewConnLimiter(httpapi.Limits{Total: 10, PerPeer: 2}).Listener)
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	get := "GET /v1/health HTTP/1.1\r\nHost: tine\r\n\r\n"
	if got := ask(t, sock, get, 2*time.Second); !strings.Contains(got, " 503 ") {
		t.Errorf("a third connection: %q, want 503", got)
	}
	held[0].Close()
	time.Sleep(100 * time.Millisecond)
	if got := ask(t, sock, get, 2*time.Second); !strings.Contains(got, " 200 ") {
		t.Errorf("after one closed: %q, want 200", got)
	}
	held[1].Close()
}
