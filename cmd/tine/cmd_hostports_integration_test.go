//go:build linux

package main

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/internal/agentmock"
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

// A run with a network of its own reaches a port of the host's loopback
// that [network] host_ports lists (a local model proxy, a mock API) at its
// own 127.0.0.1, with or without an egress policy, and no other port of
// the host's loopback.
func TestNetwork_HostPorts(t *testing.T) {
	listen := func(greeting string) int {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
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
				fmt.Fprintln(c, greeting)
				c.Close()
			}
		}()
		return ln.Addr().(*net.TCPAddr).Port
	}
	listed, other := listen("hello-from-the-host"), listen("should-not-be-reached")
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

// The real claude in forks with networks of their own (and the default
// egress policy) reaches the mock Anthropic API on the host's loopback
// through [network] host_ports, as it would a local model proxy, edits in
// its fork, and the winner is merged. Without host_ports it cannot reach
// the API at all (the forks' own 127.0.0.1 has nothing there).
func TestNetwork_HostPortsRealClaude(t *testing.T) {
	mock := newMock(t, func(r agentmock.Request) (agentmock.Turn, bool) {
		switch r.Turn {
		case 0:
			return writeAnswer("42\n"), true
		case 1:
			return agentmock.Turn{Text: "I wrote answer.txt."}, true
		}
		return agentmock.Turn{}, false
	})
	e, dir, c := claudeWorkspace(t, mock, "")
	u, err := url.Parse(mock.URL)
	if err != nil || u.Port() == "" {
		t.Fatalf("the mock's URL %q: %v", mock.URL, err)
	}
	toml, err := os.ReadFile(filepath.Join(dir, "tine.toml"))
	if err != nil {
		t.Fatal(err)
	}
	isolated := string(toml) + "[network]\nisolate = true\n"
	run := func(extra string) *forkrun.Report {
		if err := os.WriteFile(filepath.Join(dir, "tine.toml"), []byte(isolated+extra), 0o644); err != nil {
			t.Fatal(err)
		}
		rep, _ := e.forkRunWith(c, "source", "--prompt", "write the answer to answer.txt", "-n", "1",
			"--test", "test -s answer.txt", "--merge-mode", "auto", "--confidence", "0.2")
		return rep
	}
	if rep := run(""); rep == nil || rep.Outcome == forkrun.OutcomeMerged || len(mock.Conversation()) != 0 {
		t.Fatalf("an isolated fork without host_ports reached the API (%d requests): %+v", len(mock.Conversation()), rep)
	}
	rep := run("host_ports = [" + u.Port() + "]\n")
	if rep == nil || rep.Outcome != forkrun.OutcomeMerged || len(mock.Conversation()) < 2 {
		t.Fatalf("with host_ports (%d requests): %+v", len(mock.Conversation()), rep)
	}
	t.Logf("claude's stderr in the fork: %s", rep.Forks[0].AgentStderr)
	if f := rep.Forks[0]; f.Agent.Result != "success" || f.FilesChanged != 1 {
		t.Errorf("the fork's agent: result %q, files %d; stderr %s", f.Agent.Result, f.FilesChanged, f.AgentStderr)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "answer.txt")); err != nil || string(b) != "42\n" {
		t.Errorf("source answer.txt = %q, %v", b, err)
	}
}
