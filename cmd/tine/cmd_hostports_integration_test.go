//go:build linux

package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
