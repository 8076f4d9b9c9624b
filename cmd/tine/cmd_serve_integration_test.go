//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/runtime"
)

// daemon is a running tine serve.
type daemon struct {
	cmd    *exec.Cmd
	client *http.Client
	lines  chan string
	done   chan struct{} // closed when the daemon has exited; then err is its Wait's
	err    error
}

func (e *env) serve(args ...string) *daemon {
	e.t.Helper()
	return e.serveWith(nil, args...)
}

// serveWith starts tine serve with vars added to its environment.
func (e *env) serveWith(vars []string, args ...string) *daemon {
	e.t.Helper()
	cmd := exec.Command(tineBin, append([]string{"serve"}, args...)...)
	cmd.Env = append(slices.Clone(e.vars), vars...)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	d := &daemon{cmd: cmd, lines: make(chan string, 16), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			d.lines <- sc.Text()
		}
		close(d.lines)
		d.err = cmd.Wait()
		close(d.done)
	}()
	e.t.Cleanup(func() {
		cmd.Process.Kill()
		for range d.lines { // what no one read: the reader waits to send it
		}
		<-d.done
	})
	sock := filepath.Join(e.home, "ctl", "tine.sock")
	d.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var dl net.Dialer
			return dl.DialContext(ctx, "unix", sock)
		}}}
	select {
	case line := <-d.lines:
		if !strings.Contains(line, "listening on") {
			e.t.Fatalf("tine serve said %q", line)
		}
	case <-time.After(10 * time.Second):
		e.t.Fatal("tine serve did not start")
	}
	return d
}

func (d *daemon) get(t *testing.T, path string, out any) int {
	t.Helper()
	return d.do(t, "GET", path, "", out)
}

func (d *daemon) do(t *testing.T, method, path, body string, out any) int {
	t.Helper()
	req, _ := http.NewRequest(method, "http://tine"+path, strings.NewReader(body))
	resp, err := d.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	return resp.StatusCode
}

func (d *daemon) stop(t *testing.T) {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	<-d.done
	if d.err != nil {
		t.Errorf("tine serve after SIGTERM: %v", d.err)
	}
}

// Runs outlive the daemon: stopped and started again, it finds them.
func TestServe_RestartWhileRunsLive(t *testing.T) {
	toml := "[[service]]\nname = \"sleeper\"\ncommand = \"exec sleep 1000\"\n"
	e, _ := liveWorkspace(t, false, map[string]string{"tine.toml": toml})
	d := e.serve()
	if r := e.tine("serve"); r.code == 0 || !strings.Contains(r.stderr, "already listens") {
		t.Errorf("a second daemon: %v", r)
	}
	var st runtime.StartResult
	if code := d.do(t, "POST", "/v1/runs/source/start", "", &st); code != 200 || st.Pid == 0 {
		t.Fatalf("start through the API: %d %+v", code, st)
	}
	var fr engine.ForkResult
	if code := d.do(t, "POST", "/v1/runs/source/fork", `{"copies": 2}`, &fr); code != 201 || len(fr.Live) != 2 {
		t.Fatalf("fork through the API: %d %+v", code, fr)
	}
	d.stop(t)
	if _, err := os.Stat(filepath.Join(e.home, "ctl", "tine.sock")); err == nil {
		t.Error("the socket remains after the daemon stopped")
	}
	if ps := e.ps("source"); ps.State != runtime.ProcRunning || ps.Supervisor != st.Pid {
		t.Fatalf("after the daemon stopped: %+v", ps)
	}
	d = e.serve()
	var ps runtime.PS
	if code := d.get(t, "/v1/runs/source-2", &ps); code != 200 || ps.State != runtime.ProcRunning || len(ps.Services) != 1 {
		t.Errorf("the restarted daemon sees source-2 as %d %+v", code, ps)
	}
	var rows []map[string]any
	if code := d.get(t, "/v1/runs", &rows); code != 200 || len(rows) != 3 {
		t.Errorf("GET /v1/runs after restart: %d, %d rows", code, len(rows))
	}
	d.stop(t)
}

// On TCP every request needs the token from the state directory.
func TestServe_TCPToken(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	d := e.serve("--listen", "127.0.0.1:0")
	var addr string
	select {
	case line := <-d.lines:
		f := strings.Fields(line)
		addr = f[4]
	case <-time.After(5 * time.Second):
		t.Fatal("no TCP address printed")
	}
	token, err := os.ReadFile(filepath.Join(e.home, "token"))
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Join(e.home, "token")); st.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v", st.Mode().Perm())
	}
	for tok, want := range map[string]int{"": 401, "nope": 401, strings.TrimSpace(string(token)): 200} {
		req, _ := http.NewRequest("GET", "http://"+addr+"/v1/runs", nil)
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("token %q: %d, want %d", tok, resp.StatusCode, want)
		}
	}
	d.stop(t)
}

// With the daemon up, the CLI's state-changing commands go through it, and
// behave exactly as without it: output, plans and exit statuses.
func TestServe_CLIGoesThroughTheDaemon(t *testing.T) {
	e, dir := liveWorkspace(t, false, map[string]string{"a.txt": "base\n"})
	d := e.serve()
	defer d.stop(t)
	out := e.ok("fork", "source", "-n", "2", "--approach", "x")
	if !strings.Contains(out, "source-1\t") || !strings.Contains(out, "source-2\t") {
		t.Fatalf("fork through the daemon: %s", out)
	}
	expectLine(t, d, "POST /v1/runs/")
	e.execSh("source-1", "echo one > a.txt")
	e.execSh("source-2", "echo two > a.txt")
	e.ok("merge", "source-1", "--filesystem")
	expectLine(t, d, "/merge 200")
	r := e.tine("merge", "source-2", "--filesystem")
	if r.code != 9 || !strings.Contains(r.stdout, "conflict") {
		t.Errorf("a conflicting merge through the daemon: %v", r)
	}
	if r := e.tine("discard", "source-2"); r.code != 6 || !strings.Contains(r.stderr, "use --unmerged to discard anyway") {
		t.Errorf("discarding unmerged work through the daemon: %v (want the CLI's flag in the daemon's message)", r)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "one\n" {
		t.Errorf("source after the merges: %q", b)
	}
	e.ok("checkpoint", "source-2", "--label", "two")
	e.ok("discard", "--unmerged", "source-2")
	if rows := e.ls(); len(rows) != 2 {
		t.Errorf("runs after discard: %+v", rows)
	}
	// The daemon counted what went through it.
	body := d.metrics(t)
	for _, want := range []string{`tine_forks_total{backend="overlay",live="none"} 2`, `tine_merges_total{outcome="merged"} 1`,
		`tine_merges_total{outcome="conflict"} 1`, `tine_discards_total 1`, `tine_runs_live{workspace="live"} 2`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// expectLine waits for the daemon's access log to show a line containing s.
func expectLine(t *testing.T, d *daemon, s string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case line := <-d.lines:
			if strings.Contains(line, s) {
				return
			}
		case <-deadline:
			t.Fatalf("the daemon logged no request like %q", s)
		}
	}
}

// metrics returns the daemon's Prometheus exposition.
func (d *daemon) metrics(t *testing.T) string {
	t.Helper()
	resp, err := d.client.Get("http://tine/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// A daemon killed during a fork: the client's exit status and message say
// what the store holds. Killed after recording the fork, the client reports
// it made (it used to report failure); killed before, it says nothing was
// forked; either way the forks tine ls shows are the ones reported.
func TestServe_ForkAnswerLost(t *testing.T) {
	e, _ := liveWorkspace(t, false, map[string]string{"a.txt": "base\n"})
	forks := func() int { return len(e.ls()) - 1 }
	var landed, lost int
	for n := 0; n < 8; n++ {
		before := forks()
		d := e.serveWith([]string{"TINE_TEST_KILL_AT=fork:" + strconv.Itoa(n)})
		r := e.tine("fork", "source")
		killed := d.killedWithin(2 * time.Second)
		after := forks()
		switch {
		case !killed:
			d.stop(t)
			if r.code != 0 || after != before+1 {
				t.Fatalf("fault point %d never reached: %v, %d forks after %d", n, r, after, before)
			}
			if landed == 0 || lost == 0 {
				t.Errorf("%d fault points: %d forks recorded before the kill, %d not; want both kinds", n, landed, lost)
			}
			return
		case r.code == 0:
			landed++
			if after != before+1 || !strings.Contains(r.stderr, "the fork was recorded") || !strings.Contains(r.stdout, "source-") {
				t.Errorf("killed at %d, reported made: %v; forks %d → %d", n, r, before, after)
			}
		default:
			lost++
			if after != before || !strings.Contains(r.stderr, "nothing was forked") {
				t.Errorf("killed at %d, reported not made: %v; forks %d → %d", n, r, before, after)
			}
		}
	}
	t.Fatal("the daemon was killed at every one of 8 fault points")
}

// killedWithin reports whether the daemon died of SIGKILL within d.
func (d *daemon) killedWithin(wait time.Duration) bool {
	select {
	case <-d.done:
		var ee *exec.ExitError
		if errors.As(d.err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
				return true
			}
		}
		return false
	case <-time.After(wait):
		return false
	}
}
