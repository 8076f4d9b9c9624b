//go:build linux

package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/tinehq/tine/desktop"
)

// idleToml gives every run a small display with xeyes on it, and stops a
// fork's display after 3 seconds unused.
const idleToml = `[display]
enabled = true
size = "320x240"
idle_timeout = "3s"

[[service]]
name = "eyes"
display = true
command = "exec xeyes"
`

// psOf is what tine ps --json says of run's services and idle display.
type psOf struct {
	Services []struct {
		Name, State string
	} `json:"services"`
	DisplayIdle *struct {
		After    string   `json:"after"`
		Services []string `json:"services"`
	} `json:"display_idle"`
}

func (p psOf) state(name string) string {
	for _, s := range p.Services {
		if s.Name == name {
			return s.State
		}
	}
	return ""
}

// waitPS waits until cond holds of tine ps --json run.
func (e *env) waitPS(run, what string, within time.Duration, cond func(psOf) bool) psOf {
	e.t.Helper()
	var p psOf
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		p = psOf{}
		e.okJSON(&p, "ps", run, "--json")
		if cond(p) {
			return p
		}
	}
	e.t.Fatalf("%s: %s not within %v: %+v", run, what, within, p)
	return p
}

func displayStopped(p psOf) bool {
	return p.DisplayIdle != nil && p.state(desktop.ServiceX) == "stopped" && p.state(desktop.ServiceWM) == "stopped" && p.state("eyes") == "stopped"
}

func displayUp(p psOf) bool {
	return p.DisplayIdle == nil && p.state(desktop.ServiceX) == "ready" && p.state("eyes") == "ready"
}

// vncClient holds a WebSocket to run's VNC through the daemon on sock
// open until the test closes it.
func vncClient(t *testing.T, sock, runID string) *websocket.Conn {
	t.Helper()
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://tine/v1/runs/"+runID+"/vnc", &websocket.DialOptions{HTTPClient: hc, Subprotocols: []string{"binary"}})
	if err != nil {
		t.Fatalf("VNC of %s: %v", runID, err)
	}
	if _, b, err := c.Read(ctx); err != nil || string(b) != rfbVersion {
		t.Fatalf("VNC of %s said %q, %v", runID, b, err)
	}
	return c
}

// A fork's display nobody watches or drives stops after [display]
// idle_timeout, with the services drawing on it, and says so in its events
// and tine ps; a screenshot starts it again, a connected VNC client keeps
// it up, and the source's display never stops for this.
func TestDesktop_IdleForkDisplayStops(t *testing.T) {
	requireDesktop(t)
	e := newEnv(t)
	dir := e.workspaceDir("idle")
	writeTestFiles(t, dir, map[string]string{"tine.toml": idleToml})
	e.ok("init", dir)
	d := e.serve()
	defer d.stop(t)
	e.ok("start", "source")
	var fork struct {
		Forks []struct{ ID, Name string }
	}
	e.okJSON(&fork, "fork", "source", "-n", "2", "--wait", "--json")

	e.waitPS("source-1", "the idle display stopped", 30*time.Second, displayStopped)
	p := e.waitPS("source-2", "the idle display stopped", 30*time.Second, displayStopped)
	if p.DisplayIdle.After != "3s" || !slices.Contains(p.DisplayIdle.Services, "eyes") {
		t.Errorf("tine ps says of the idle display: %+v", p.DisplayIdle)
	}
	if out := e.ok("ps", "source-1"); !strings.Contains(out, "display: stopped at") || !strings.Contains(out, "idle for 3s") {
		t.Errorf("tine ps does not say the display stopped idle:\n%s", out)
	}
	if !hasEvent(e.events("source-1"), "display.idle") {
		t.Errorf("no display.idle event on source-1: %+v", e.events("source-1"))
	}
	if p := e.waitPS("source", "up", time.Second, displayUp); p.DisplayIdle != nil {
		t.Errorf("the source's display was stopped: %+v", p)
	}

	// A screenshot starts it again, from the fork's files.
	e.screenOf("source-1")
	e.waitPS("source-1", "the display up again", 5*time.Second, displayUp)
	if !hasEvent(e.events("source-1"), "display.wake") {
		t.Errorf("no display.wake event on source-1")
	}
	// A VNC client keeps source-2's up (its connecting started it again)
	// for as long as it is connected.
	ws := vncClient(t, filepath.Join(e.home, "ctl", "tine.sock"), fork.Forks[1].ID)
	e.waitPS("source-2", "the display up again", 5*time.Second, displayUp)
	time.Sleep(6 * time.Second)
	e.waitPS("source-2", "up while a VNC client is connected", time.Second, displayUp)
	ws.Close(websocket.StatusNormalClosure, "")
	e.waitPS("source-2", "the display stopped once its client left", 30*time.Second, displayStopped)
	e.waitPS("source", "up", time.Second, displayUp)
}

func hasEvent(evs []jsonEvent, kind string) bool {
	return slices.ContainsFunc(evs, func(ev jsonEvent) bool { return ev.Kind == kind })
}

// fakeVNC is a VNC server of a fork's own that takes the place of its
// display's: it binds a socket of its own and renames it over the
// display's VNC socket, and with "kill" also kills the X server, again
// and again, and listens on the X server's old TCP port. It greets with
// RFB 3.7, which TigerVNC never sends first, so that a test sees whom the
// bridge reached.
const fakeVNC = `import os, socket, subprocess, sys, threading, time
GREETING = b"RFB 003.007\n"
def serve(s):
    while True:
        c, _ = s.accept()
        c.sendall(GREETING)
        threading.Timer(5, c.close).start()
u = socket.socket(socket.AF_UNIX)
u.bind("/tmp/.fake-vnc"); u.listen(8)
threading.Thread(target=serve, args=(u,), daemon=True).start()
if sys.argv[1] == "kill":
    t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    while True:
        subprocess.run(["pkill", "-KILL", "-x", "Xvnc"])
        try:
            t.bind(("127.0.0.1", 5900)); break
        except OSError: time.sleep(0.05)
    t.listen(8)
    threading.Thread(target=serve, args=(t,), daemon=True).start()
os.rename("/tmp/.fake-vnc", "/tmp/.tine-vnc")
open("/tmp/fake.ready", "w").close()
while True:
    if sys.argv[1] == "kill": subprocess.run(["pkill", "-KILL", "-x", "Xvnc"])
    time.sleep(0.05)
`

// The bridge carries only the VNC of the X server tine started for the
// run: a fork that puts a VNC server of its own in its place (its socket
// renamed over the display's, or the X server killed for good and its
// port taken) gets no byte of it to a person's browser; the bridge
// refuses. Before, the bridge dialled the run's port 5900, whoever
// listened there.
func TestDesktop_BridgeRefusesAReplacedVNCServer(t *testing.T) {
	requireDesktop(t)
	if _, err := exec.LookPath("pkill"); err != nil {
		t.Skip("requires pkill")
	}
	e := newEnv(t)
	dir := e.workspaceDir("fake")
	writeTestFiles(t, dir, map[string]string{"tine.toml": "[display]\nenabled = true\nsize = \"320x240\"\n", "fake.py": fakeVNC})
	e.ok("init", dir)
	e.ok("start", "source")
	var fork struct {
		Forks []struct{ ID, Name string }
	}
	e.okJSON(&fork, "fork", "source", "-n", "2", "--wait", "--json")
	d := e.serve()
	defer d.stop(t)
	sock := filepath.Join(e.home, "ctl", "tine.sock")
	for i, how := range []string{"replace", "kill"} {
		f := fork.Forks[i]
		if status, first := wsHandshake(t, nil, sock, "/v1/runs/"+f.ID+"/vnc"); !strings.Contains(status, " 101 ") || first != rfbVersion {
			t.Fatalf("%s's display before: %q, %q", f.Name, status, first)
		}
		e.execSh(f.Name, "python3 "+filepath.Join(dir, "fake.py")+" "+how+" >/tmp/fake.log 2>&1 &")
		for end := time.Now().Add(20 * time.Second); e.tine("exec", f.Name, "--", "test", "-e", "/tmp/fake.ready").code != 0; time.Sleep(100 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%s's fake VNC server did not start: %s", f.Name, e.execSh(f.Name, "cat /tmp/fake.log"))
			}
		}
		for range 3 {
			status, first := wsHandshake(t, nil, sock, "/v1/runs/"+f.ID+"/vnc")
			if first == "RFB 003.007\n" {
				t.Errorf("%s (%s): the bridge carried the fork's own VNC server: %q, first message %q", f.Name, how, status, first)
			}
			time.Sleep(300 * time.Millisecond)
		}
		if how == "replace" { // the X server runs: what listens is not it
			var body map[string]any
			if code := d.get(t, "/v1/runs/"+f.ID+"/vnc", &body); code != http.StatusConflict || !strings.Contains(fmt.Sprint(body), "not the run's X server") {
				t.Errorf("%s: the bridge answered %d %v, want 409 naming the server not the X server", f.Name, code, body)
			}
		}
	}
}

// A display forked live by CRIU (its X server restored, not started by
// the fork's supervisor) stops when idle like a restarted one, and a
// screenshot starts it again. Before, the restored X server outlived the
// stop, and the display started again beside it failed.
func TestDesktop_IdleLiveForkedDisplayStops(t *testing.T) {
	requireDesktop(t)
	requireCRIU(t)
	e := newEnv(t)
	dir := e.workspaceDir("idlelive")
	writeTestFiles(t, dir, map[string]string{"tine.toml": idleToml})
	e.ok("init", dir)
	d := e.serve()
	defer d.stop(t)
	e.ok("start", "source")
	if out := e.ok("fork", "source", "--live", "criu", "--wait"); !strings.Contains(out, "display forked live by CRIU") {
		t.Fatalf("the display was not forked live:\n%s", out)
	}
	e.waitPS("source-1", "the idle display stopped", 30*time.Second, func(p psOf) bool { return p.DisplayIdle != nil })
	if got := e.execSh("source-1", `pgrep -x Xvnc | wc -l`); got != "0\n" {
		t.Errorf("source-1's restored X server outlived its idle stop: %q running", got)
	}
	e.screenOf("source-1")
	e.waitPS("source-1", "up again", 30*time.Second, displayUp)
}
