//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/layout"
	"golang.org/x/sys/unix"
)

// The daemon under abuse (issue 31): floods of large bodies and of
// connections, smuggled and ambiguous requests, virtual file systems as
// workspaces, all through the real tine serve.

// tcpAddr is the address tine serve --listen printed.
func (d *daemon) tcpAddr(t *testing.T) string {
	t.Helper()
	select {
	case line := <-d.lines:
		if f := strings.Fields(line); len(f) > 4 && strings.Contains(line, "bearer token") {
			return f[4]
		}
		t.Fatalf("tine serve said %q, not its TCP address", line)
	case <-time.After(5 * time.Second):
		t.Fatal("no TCP address printed")
	}
	return ""
}

// usage is the daemon's resident memory (bytes) and open descriptors.
func (d *daemon) usage(t *testing.T) (rss int64, fds int) {
	t.Helper()
	pid := strconv.Itoa(d.cmd.Process.Pid)
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			rss = kb << 10
		}
	}
	ents, err := os.ReadDir("/proc/" + pid + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	return rss, len(ents)
}

// flood opens n connections with dial, each sending head (a request's
// header, ending in a blank line) and then body bytes, without the last
// one, so that a daemon reading bodies waits for it. It returns once
// every client has written what it could (within a few seconds); the
// connections stay open until the test ends.
func flood(t *testing.T, n int, dial func() (net.Conn, error), head string, body int) {
	t.Helper()
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	chunk := make([]byte, 64<<10)
	for i := range chunk {
		chunk[i] = ' '
	}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			c, err := dial()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			c.SetWriteDeadline(time.Now().Add(4 * time.Second))
			if _, err := io.WriteString(c, head); err != nil {
				return
			}
			for left := body - 1; left > 0; left -= len(chunk) {
				if _, err := c.Write(chunk[:min(left, len(chunk))]); err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
}

// 200 clients on each of the daemon's kinds of socket (the system socket
// every user may open, a run's socket, TCP without the token), each
// sending a 1 MiB body: the daemon reads none of them (their senders are
// refused, or the body is over its route's bound), keeps at most its
// per-peer share of connections, and its memory and descriptors stay
// bounded. Before, it read every body whole before looking at who sent it
// (+600 MiB, 600 descriptors).
func TestServe_FloodStaysBounded(t *testing.T) {
	toml := "[[service]]\nname = \"sleeper\"\ncommand = \"exec sleep 1000\"\n"
	e, _ := liveWorkspace(t, false, map[string]string{"tine.toml": toml})
	sys := filepath.Join(publicDir(t), "tine.sock")
	d := e.serveWith([]string{"TINE_DAEMON_SOCKET=" + sys}, "--system", "--listen", "127.0.0.1:0")
	<-d.lines // the system socket
	addr := d.tcpAddr(t)
	e.ok("start", "source")
	runSock := e.runSocket("source")
	rss0, fds0 := d.usage(t)

	const n, body = 200, 1 << 20
	head := func(path string) string {
		return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: tine\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, body)
	}
	unixDial := func(p string) func() (net.Conn, error) {
		return func() (net.Conn, error) { return net.Dial("unix", p) }
	}
	var wg sync.WaitGroup
	wg.Go(func() { flood(t, n, unixDial(sys), head("/v1/workspaces"), body) })
	wg.Go(func() { flood(t, n, unixDial(runSock), head("/v1/runs/source/evidence"), body) })
	wg.Go(func() {
		flood(t, n, func() (net.Conn, error) { return net.Dial("tcp", addr) }, head("/v1/workspaces"), body)
	})
	wg.Wait()
	time.Sleep(500 * time.Millisecond)
	rss, fds := d.usage(t)
	t.Logf("daemon: %d MiB, %d descriptors before; %d MiB, %d descriptors under the flood", rss0>>20, fds0, rss>>20, fds)
	if rss-rss0 > 96<<20 {
		t.Errorf("the daemon grew by %d MiB under the flood", (rss-rss0)>>20)
	}
	if fds-fds0 > 3*32+16 {
		t.Errorf("the daemon holds %d descriptors under the flood (%d before)", fds, fds0)
	}
	// It still serves.
	var h map[string]any
	if code := d.get(t, "/v1/health", &h); code != 200 {
		t.Errorf("GET /v1/health after the flood: %d", code)
	}
}

// runSocket is the path of run's own socket, once the daemon serves it.
func (e *env) runSocket(run string) string {
	e.t.Helper()
	for _, row := range e.ls() {
		if row.Name != run {
			continue
		}
		p := layout.New(e.home).Run(row.Workspace, row.ID).Socket()
		for range 100 {
			if _, err := os.Stat(p); err == nil {
				return p
			}
			time.Sleep(100 * time.Millisecond)
		}
		e.t.Fatalf("no socket of run %s at %s", run, p)
	}
	e.t.Fatalf("no run %s", run)
	return ""
}

// A peer that opens more than its share of connections has the rest
// closed at once, with a one-line answer, while another user (on the
// system socket) and another address (on TCP) are still served.
func TestServe_PerPeerConnectionLimit(t *testing.T) {
	_, ann, sock, dir := userWorkspace(t)
	hold := func(dial func() (net.Conn, error), n int) (closed int, first string) {
		t.Helper()
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				c, err := dial()
				if err != nil {
					return
				}
				t.Cleanup(func() { c.Close() })
				c.SetReadDeadline(time.Now().Add(2 * time.Second))
				b, err := bufio.NewReader(c).ReadString('\n')
				if err == nil || !isTimeout(err) {
					mu.Lock()
					closed++
					if first == "" {
						first = b
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return closed, first
	}
	closed, first := hold(func() (net.Conn, error) { return net.Dial("unix", sock) }, 100)
	if closed < 100-32 || closed == 100 {
		t.Errorf("of 100 idle connections of root's, %d were closed at once; want all but its share", closed)
	}
	if !strings.Contains(first, " 503 ") {
		t.Errorf("a connection over the limit was answered %q, want a 503", first)
	}
	ann.ok(dir, "init", ".") // another user is still served
	ann.ok(dir, "ls")
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// Over TCP, the share is per address: one address's flood leaves
// another's requests served.
func TestServe_PerAddressConnectionLimit(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	d := e.serve("--listen", "127.0.0.1:0")
	addr := d.tcpAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 40 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	time.Sleep(300 * time.Millisecond)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "GET /v1/health HTTP/1.1\r\nHost: tine\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, _ := bufio.NewReader(c).ReadString('\n'); !strings.Contains(line, " 503 ") {
		t.Errorf("the 41st connection from 127.0.0.1 was answered %q, want 503", line)
	}
	other := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	c2, err := other.Dial("tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	io.WriteString(c2, "GET /v1/health HTTP/1.1\r\nHost: tine\r\n\r\n")
	c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, _ := bufio.NewReader(c2).ReadString('\n'); !strings.Contains(line, " 401 ") {
		t.Errorf("a connection from 127.0.0.2 was answered %q, want 401 (served: no token)", line)
	}
}

// rawAsk sends raw (a whole request) on a new connection from dial and
// returns the answer's status and body.
func rawAsk(t *testing.T, dial func() (net.Conn, error), raw string) (int, string) {
	t.Helper()
	c, err := dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer to %q: %v", raw, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A request with both Content-Length and Transfer-Encoding (which a proxy
// in front may frame otherwise than the daemon: request smuggling) is
// refused, on the unix socket and on TCP; so is a duplicate key in a JSON
// body (Go took the last, another parser may take the first). Before,
// both were served.
func TestServe_AmbiguousRequestsRefused(t *testing.T) {
	e, _ := liveWorkspace(t, false, nil)
	d := e.serve("--listen", "127.0.0.1:0")
	addr := d.tcpAddr(t)
	token, err := os.ReadFile(filepath.Join(e.home, "token"))
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(e.home, "ctl", "tine.sock")
	dials := map[string]func() (net.Conn, error){
		"unix": func() (net.Conn, error) { return net.Dial("unix", sock) },
		"tcp":  func() (net.Conn, error) { return net.Dial("tcp", addr) },
	}
	auth := map[string]string{"unix": "", "tcp": "Authorization: Bearer " + strings.TrimSpace(string(token)) + "\r\n"}
	for via, dial := range dials {
		chunked := `{"label":"smuggled"}`
		raw := "POST /v1/runs/source/checkpoint HTTP/1.1\r\nHost: tine\r\n" + auth[via] +
			"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n" +
			fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(chunked), chunked)
		code, body := rawAsk(t, dial, raw)
		if code != 400 || !strings.Contains(body, "Transfer-Encoding") || !strings.Contains(body, `"invalid"`) {
			t.Errorf("%s: Content-Length with Transfer-Encoding answered %d %s, want 400 naming Transfer-Encoding", via, code, body)
		}
		dup := `{"label":"a","label":"b"}`
		raw = "POST /v1/runs/source/checkpoint HTTP/1.1\r\nHost: tine\r\n" + auth[via] +
			fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(dup), dup)
		code, body = rawAsk(t, dial, raw)
		if code != 400 || !strings.Contains(body, `\"label\"`) || !strings.Contains(body, "twice") {
			t.Errorf("%s: a duplicate key answered %d %s, want 400 naming the key", via, code, body)
		}
	}
	for _, v := range e.treeState("live").Versions {
		if v.Kind == "checkpoint" {
			t.Errorf("a checkpoint after the refused requests: %+v", v)
		}
	}
	// A body over its route's bound is refused without being read: 413,
	// at once.
	big := fmt.Sprintf("POST /v1/runs/source/checkpoint HTTP/1.1\r\nHost: tine\r\nContent-Length: %d\r\n\r\n{", 10<<20)
	code, body := rawAsk(t, dials["unix"], big)
	var ae struct{ Error, Code string }
	json.Unmarshal([]byte(body), &ae)
	if code != 413 || ae.Code != "invalid" || !strings.Contains(ae.Error, "larger than") {
		t.Errorf("a 10 MiB checkpoint body answered %d %s, want 413", code, body)
	}
}

// /proc, /sys and file systems of their kinds are no workspaces:
// tine init refuses them (exit 2), directly and through the daemon, and a
// tmpfs elsewhere stays allowed. Before, init of /proc/self as root tried
// to copy /proc (and the daemon answered 500).
func TestInit_VirtualFileSystemsRefused(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	procAgain := filepath.Join(e.tmp, "proc-again")
	os.Mkdir(procAgain, 0o755)
	if err := mountFS("proc", procAgain); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unmount(t, procAgain) })
	// Not /dev here: were the check gone, init would move its device
	// nodes (engine's TestCheckRealFS covers it without touching it).
	for _, p := range []string{"/proc/self", "/proc", "/sys/kernel", procAgain} {
		r := e.tine("init", p)
		requireOneLineError(t, r, 2)
		if !strings.Contains(r.stderr, "virtual") {
			t.Errorf("tine init %s: %q, want it to say why", p, r.stderr)
		}
	}
	d := e.serve()
	var ae struct{ Error, Code string }
	if code := d.do(t, "POST", "/v1/workspaces", `{"path":"/proc/self"}`, &ae); code != 400 || ae.Code != "invalid" {
		t.Errorf("POST /v1/workspaces /proc/self: %d %+v, want 400 invalid", code, ae)
	}
	if rows := e.ls(); len(rows) != 0 {
		t.Errorf("workspaces after the refusals: %+v", rows)
	}
	tmp := e.workspaceDir("tmpfs")
	if err := mountFS("tmpfs", tmp); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unmount(t, tmp) })
	os.WriteFile(filepath.Join(tmp, "a.txt"), []byte("a\n"), 0o644)
	e.ok("init", tmp)
	e.ok("release", "--unmerged", tmp)
}

// mountFS mounts a file system of type fstype (proc, tmpfs) at dir.
func mountFS(fstype, dir string) error { return unix.Mount(fstype, dir, fstype, 0, "") }

// The dashboard's live updates (server-sent events) stream through the
// real tine serve, on the unix socket and on TCP. Before, its access log's
// wrapper hid the connection's Flush and the stream answered 501.
func TestServe_DashboardStreamsEvents(t *testing.T) {
	e, _ := liveWorkspace(t, false, map[string]string{"a.txt": "a\n"})
	d := e.serve("--listen", "127.0.0.1:0")
	addr := d.tcpAddr(t)
	token, err := os.ReadFile(filepath.Join(e.home, "token"))
	if err != nil {
		t.Fatal(err)
	}
	for _, via := range []string{"unix", "tcp"} {
		req, _ := http.NewRequest("GET", "http://tine/ui/events/stream", nil)
		client := d.client
		if via == "tcp" {
			req, _ = http.NewRequest("GET", "http://"+addr+"/ui/events/stream", nil)
			req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
			client = &http.Client{}
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Errorf("%s: GET /ui/events/stream = %d %s", via, resp.StatusCode, b)
			continue
		}
		lines := make(chan string, 64)
		go func() {
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		e.ok("checkpoint", "source", "--label", "seen-"+via)
		if !awaitLine(lines, "event: tine", 10*time.Second) {
			t.Errorf("%s: no event arrived on the stream after a checkpoint", via)
		}
		resp.Body.Close()
	}
}

// awaitLine waits up to d for a line equal to want.
func awaitLine(lines <-chan string, want string, d time.Duration) bool {
	deadline := time.After(d)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return false
			}
			if l == want {
				return true
			}
		case <-deadline:
			return false
		}
	}
}
