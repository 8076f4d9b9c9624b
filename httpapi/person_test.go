//go:build linux

package httpapi_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/runtime"
)

// Two JSON values one after the other are no fork request.
func TestAPI_ConcatenatedJSON(t *testing.T) {
	srv, _ := newAPI(t, "")
	for _, body := range []string{`{"copies": 1}{"copies": 2}`, `{"copies": 1} {}`, `{"copies": 1} x`} {
		var e httpapi.Error
		if code := call(t, srv, "POST", "/v1/runs/source/fork", "", body, &e); code != 400 || e.Code != "invalid" {
			t.Errorf("fork with %q = %d %+v; want 400 invalid", body, code, e)
		}
	}
	var rows []httpapi.RunRow
	if call(t, srv, "GET", "/v1/runs", "", nil, &rows); len(rows) != 1 {
		t.Errorf("%d runs after refused forks", len(rows))
	}
}

// unixSocket serves h on a unix socket under a short temporary path, its
// listener wrapped by wrap if any, and returns the path.
func unixSocket(t *testing.T, srv *http.Server, wrap ...func(net.Listener) net.Listener) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tapi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range wrap {
		ln = w(ln)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return sock
}

// A client that sends its body a byte at a time is cut off once the body
// timeout passes, however it keeps trickling.
func TestServer_TrickledBodyTimesOut(t *testing.T) {
	_, e := newAPI(t, "")
	const body = 300 * time.Millisecond
	srv := httpapi.NewHTTPServer(httpapi.New(e, ""), httpapi.Timeouts{Header: time.Second, Body: body, Idle: time.Second}, httpapi.ConnContext)
	c, err := net.Dial("unix", unixSocket(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t0 := time.Now()
	if _, err := c.Write([]byte("POST /v1/runs/source/fork HTTP/1.1\r\nHost: tine\r\nContent-Length: 1000\r\n\r\n{")); err != nil {
		t.Fatal(err)
	}
	answer := make(chan string, 1)
	go func() {
		b, _ := bufio.NewReader(c).ReadString(0) // to EOF
		answer <- b
	}()
	for {
		select {
		case a := <-answer:
			if d := time.Since(t0); d > body+2*time.Second {
				t.Errorf("closed after %v", d)
			}
			if !strings.Contains(a, " 408 ") {
				t.Errorf("answer %q, want a 408", a)
			}
			return
		case <-time.After(50 * time.Millisecond):
			c.Write([]byte(" "))
		}
		if time.Since(t0) > 10*time.Second {
			t.Fatal("a trickled body was still being read after 10s")
		}
	}
}

// A process in another pid namespace (as every run's is) is no person on
// the people's socket, though it is in no run's cgroup: it cannot approve,
// list or read anything there.
func TestConnContext_OtherPidNamespaceIsNoPerson(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("requires root for a pid namespace")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("requires python3")
	}
	_, e := newAPI(t, "")
	sock := unixSocket(t, &http.Server{Handler: httpapi.New(e, ""), ConnContext: httpapi.ConnContext})
	ask := func(clone uintptr, method, path string) string {
		t.Helper()
		script := `import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(("%s %s HTTP/1.0\r\nHost: tine\r\nContent-Length: 0\r\n\r\n" % (sys.argv[2], sys.argv[3])).encode())
print(s.recv(65536).decode().split("\r\n")[0])`
		cmd := exec.Command(py, "-c", script, sock, method, path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: clone}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	for _, tc := range []struct{ method, path string }{{"GET", "/v1/runs"}, {"GET", "/v1/approvals"}, {"POST", "/v1/approvals/a12345678/approve"}} {
		if got := ask(syscall.CLONE_NEWPID, tc.method, tc.path); !strings.Contains(got, " 403 ") {
			t.Errorf("%s %s from another pid namespace: %q", tc.method, tc.path, got)
		}
		if got := ask(syscall.CLONE_NEWNS, tc.method, tc.path); !strings.Contains(got, " 403 ") {
			t.Errorf("%s %s from another mount namespace: %q", tc.method, tc.path, got)
		}
	}
	if got := ask(0, "GET", "/v1/runs"); !strings.Contains(got, " 200 ") {
		t.Errorf("GET /v1/runs from the daemon's namespaces: %q", got)
	}
}

// Every live run that has started gets a socket of its own, where even the
// host's unsigned requests are the run's (refused without its
// capability); the socket goes when the run does.
func TestRunSockets_FollowRuns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("requires root to start runs")
	}
	_, e := newAPI(t, "")
	ctx := context.Background()
	if _, err := runtime.Of(e).Start(ctx, "source", runtime.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runtime.Of(e).Stop(ctx, "source") })
	rs := httpapi.NewRunSockets(e, httpapi.New(e, ""), httpapi.DefaultTimeouts, httpapi.DefaultLimits)
	t.Cleanup(func() { rs.Shutdown(ctx) })
	if err := rs.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	r, _ := e.FindRun(ctx, "source")
	sock := e.Layout().Run(r.Workspace.ID, r.Run.ID).Socket()
	if p := rs.Paths()[r.Run.ID]; p != sock {
		t.Fatalf("run sockets %v, want %s", rs.Paths(), sock)
	}
	cl := httpapi.NewClient(sock, nil)
	var rows []httpapi.RunRow
	if code, err := cl.Do(ctx, "GET", "/v1/runs", nil, &rows); code != 403 {
		t.Errorf("an unsigned request on a run's socket = %d %v", code, err)
	}
	// Refused before its body is read: a body declared and never sent
	// does not hold the answer up.
	raw := "POST /v1/runs/source/evidence HTTP/1.1\r\nHost: tine\r\nContent-Length: 1048576\r\n\r\n"
	if got := ask(t, sock, raw, 5*time.Second); !strings.Contains(got, " 403 ") {
		t.Errorf("an unsigned request whose body never comes = %q, want 403 at once", got)
	}
	if err := os.Remove(sock); err != nil {
		t.Fatal(err)
	}
	rs.Sync(ctx)
	if _, err := os.Stat(sock); err != nil {
		t.Errorf("a removed run socket is not made again: %v", err)
	}
	rs.Shutdown(ctx)
	if _, err := os.Stat(sock); err == nil {
		t.Error("a run socket remains after shutdown")
	}
}
