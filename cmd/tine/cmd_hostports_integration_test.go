//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tinehq/tine/egress"
	"github.com/tinehq/tine/forkrun"
)

// hostPortScript connects to 127.0.0.1:$1 inside the run and prints what
// the server says, or "refused".
const hostPortScript = `import socket, sys
s = socket.socket()
s.settimeout(3)
try:
    s.connect(("127.0.0.1", int(sys.argv[1])))
    print(s.recv(64).decode().strip())
except OSError:
    print("refused")
`

// testListener serves greeting on a port of the host's loopback until the
// test ends, and returns the port.
func testListener(t *testing.T, greeting string) int {
	t.Helper()
	return serveGreeting(t, "tcp", "127.0.0.1:0", greeting+"\n").Addr().(*net.TCPAddr).Port
}

// serveGreeting listens on network's addr until the test ends, writing
// greeting to each connection and closing it.
func serveGreeting(t *testing.T, network, addr, greeting string) net.Listener {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte(greeting))
			c.Close()
		}
	}()
	return ln
}

// A run with a network of its own reaches a port of the host's loopback
// that [network] host_ports lists (a local model proxy, a mock API) at its
// own 127.0.0.1, with or without an egress policy, and no other port of
// the host's loopback.
func TestNetwork_HostPorts(t *testing.T) {
	listed, other := testListener(t, "hello-from-the-host"), testListener(t, "should-not-be-reached")
	toml := fmt.Sprintf("[network]\nisolate = true\nhost_ports = [%d]\n", listed)
	e, dir := liveWorkspace(t, true, map[string]string{"tine.toml": toml, "hp.py": hostPortScript})
	e.ok("fork", "source", "-n", "1")
	for _, run := range []string{"source", "source-1"} { // the fork has the default egress policy; the source none
		got := strings.Fields(e.execSh(run, fmt.Sprintf("python3 hp.py %d; python3 hp.py %d", listed, other)))
		if strings.Join(got, " ") != "hello-from-the-host refused" {
			t.Errorf("%s reached %v; want the listed port only", run, got)
		}
	}
	// A port that is none is refused in one line, and nothing starts.
	e.ok("stop", "source")
	if err := os.WriteFile(filepath.Join(dir, "tine.toml"), []byte("[network]\nisolate = true\nhost_ports = [70000]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := e.tine("start", "source"); r.code == 0 || !strings.Contains(r.stderr, "host_ports: 70000 is no port") {
		t.Errorf("start with a bad host port: %v", r)
	}
	if st := e.ps("source").State; st != "stopped" {
		t.Errorf("the source is %s after a refused start", st)
	}
}

// Without any [network] settings, a fork has a network of its own with
// the default egress policy, while the source shares the host's. The
// loopback port that a command's agent is pointed at (ANTHROPIC_BASE_URL
// in the environment tine exec was given) is forwarded into the fork when
// the command starts, and no other port of the host's loopback is
// reachable. fork_network = "host" in the source's tine.toml gives forks
// the host's network again (and a fork's own file cannot).
func TestNetwork_ForksHaveTheirOwnByDefault(t *testing.T) {
	api, other := testListener(t, "hello-from-the-api"), testListener(t, "should-not-be-reached")
	e, dir := liveWorkspace(t, false, map[string]string{"hp.py": hostPortScript})
	e.ok("fork", "source", "-n", "1")
	e.ok("start", "source-1")
	probe := fmt.Sprintf("python3 hp.py %d; python3 hp.py %d", api, other)
	if got := strings.Join(strings.Fields(e.execSh("source-1", probe)), " "); got != "refused refused" {
		t.Errorf("a fork reached the host's loopback with no agent pointed there: %q", got)
	}
	pointed := call{vars: []string{fmt.Sprintf("ANTHROPIC_BASE_URL=http://127.0.0.1:%d", api)}}
	r := e.run(pointed, "exec", "source-1", "--", "sh", "-c", probe)
	if got := strings.Join(strings.Fields(r.stdout), " "); r.code != 0 || got != "hello-from-the-api refused" {
		t.Errorf("with its agent pointed at the host's port %d, the fork reached %q (%v)", api, got, r)
	}
	// The host's port the fork tried and could not reach is on its record,
	// saying why (the connection never left the fork, so no rule saw it).
	var refused *egress.Record
	waitFor(t, func() bool {
		for _, r := range e.ps("source-1").Refused {
			if r.Port == uint16(other) && r.Note != "" {
				refused = &r
				return true
			}
		}
		return false
	})
	if refused.Addr != "127.0.0.1" || !strings.Contains(refused.Note, "host_ports") {
		t.Errorf("the refusal of the host's port %d: %+v", other, refused)
	}
	if out := e.ok("ps", "source-1"); !strings.Contains(out, fmt.Sprintf("127.0.0.1:%d: nothing of the run listens there", other)) {
		t.Errorf("tine ps does not say why the host's port was refused:\n%s", out)
	}
	ps := e.ps("source-1")
	if ps.Addr == "" || ps.Egress == nil || len(ps.HostPorts) != 1 || ps.HostPorts[0] != api {
		t.Errorf("tine ps of the fork: address %q, egress %+v, host ports %v", ps.Addr, ps.Egress, ps.HostPorts)
	}
	if out := e.ok("ps", "source-1"); !strings.Contains(out, fmt.Sprintf("host ports: %d", api)) || !strings.Contains(out, "egress: only ") {
		t.Errorf("tine ps:\n%s", out)
	}
	// An API elsewhere that an exec's agent is pointed at joins the policy.
	if ps.Egress != nil && slices.ContainsFunc(ps.Egress.Rules, func(r egress.Rule) bool { return r.Host == "gateway.corp.example" }) {
		t.Fatalf("the gateway is allowed before anything pointed at it: %+v", ps.Egress.Rules)
	}
	e.run(call{vars: []string{"OPENAI_BASE_URL=https://gateway.corp.example:8443/v1"}}, "exec", "source-1", "--", "true")
	if ps := e.ps("source-1"); ps.Egress == nil || !slices.Contains(ps.Egress.Rules, egress.Rule{Host: "gateway.corp.example", Port: 8443}) {
		t.Errorf("after an exec pointed at gateway.corp.example:8443, the fork's policy: %+v", ps.Egress)
	}
	if got := strings.Join(strings.Fields(e.execSh("source", probe)), " "); got != "hello-from-the-api should-not-be-reached" {
		t.Errorf("the source (the host's network) reached %q", got)
	}
	// The fork's own tine.toml cannot give it the host's network.
	e.execSh("source-1", `printf '[network]\nfork_network = "host"\n' > tine.toml`)
	e.ok("stop", "source-1")
	e.ok("start", "source-1")
	if ps := e.ps("source-1"); ps.Addr == "" || ps.Egress == nil {
		t.Errorf("after the fork wrote fork_network = \"host\": address %q, egress %+v", ps.Addr, ps.Egress)
	}
	// The source's can.
	if err := os.WriteFile(filepath.Join(dir, "tine.toml"), []byte("[network]\nfork_network = \"host\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.ok("fork", "source", "-n", "1", "--name", "onhost")
	e.ok("start", "onhost")
	if got := strings.Join(strings.Fields(e.execSh("onhost", probe)), " "); got != "hello-from-the-api should-not-be-reached" {
		t.Errorf("a fork with fork_network = \"host\" reached %q", got)
	}
	if out := e.ok("ps", "onhost"); !strings.Contains(out, "network: the host's, unrestricted") {
		t.Errorf("tine ps of a fork on the host's network:\n%s", out)
	}
}

// The real claude in forks with no [network] settings (their own
// networks, the default egress policy) reaches the mock Anthropic API on
// the host's loopback, as it would a local model proxy: ANTHROPIC_BASE_URL
// names its port, which tine forwards into each fork. It edits in its
// fork, and the winner is merged. (TestNetwork_ForksHaveTheirOwnByDefault
// shows that nothing else of the host's loopback is reachable there.)
func TestNetwork_HostPortsRealClaude(t *testing.T) {
	mock := answerMock(t)
	e, dir, c := claudeWorkspace(t, mock, "")
	u, err := url.Parse(mock.URL)
	if err != nil || u.Port() == "" {
		t.Fatalf("the mock's URL %q: %v", mock.URL, err)
	}
	rep, _ := e.forkRunWith(c, "source", "--prompt", "write the answer to answer.txt", "-n", "1",
		"--test", "test -s answer.txt", "--merge-mode", "auto", "--confidence", "0.2")
	if rep == nil || rep.Outcome != forkrun.OutcomeMerged || len(mock.Conversation()) < 2 {
		t.Fatalf("claude in a fork of its own network (%d requests): %+v", len(mock.Conversation()), rep)
	}
	t.Logf("claude's stderr in the fork: %s", rep.Forks[0].AgentStderr)
	if f := rep.Forks[0]; f.Agent.Result != "success" || f.FilesChanged != 1 {
		t.Errorf("the fork's agent: result %q, files %d; stderr %s", f.Agent.Result, f.FilesChanged, f.AgentStderr)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "answer.txt")); err != nil || string(b) != "42\n" {
		t.Errorf("source answer.txt = %q, %v", b, err)
	}
	// It ran in a network of its own: the fork's start recorded an address.
	var addr string
	for _, ev := range e.events(rep.Forks[0].Name) {
		if ev.Kind == "start" {
			var d struct{ Addr string }
			json.Unmarshal(ev.Detail, &d)
			addr = d.Addr
		}
	}
	if addr == "" {
		t.Errorf("the fork started without an address of its own: %+v", e.events(rep.Forks[0].Name))
	}
}
