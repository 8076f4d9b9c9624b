//go:build linux

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tinehq/tine"
)

// escapeScript moves the process running it out of its run's cgroups (into
// every hierarchy's root, as root inside a run may), then asks to approve
// approval id on each socket it can find: the one the run is given, the
// people's socket at its host path, and that path again after unmounting
// whatever hides it. It prints one line per attempt.
const escapeScript = `import os, socket, subprocess, sys
home, id = sys.argv[1], sys.argv[2]
for d in os.listdir("/sys/fs/cgroup"):
    try:
        open("/sys/fs/cgroup/%s/cgroup.procs" % d, "w").write(str(os.getpid()))
    except OSError:
        pass
print("cgroup " + open("/proc/self/cgroup").read().replace("\n", " "))
def ask(path, what):
    try:
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        s.sendall(("%s\r\nHost: tine\r\nContent-Length: 2\r\n\r\n{}" % what).encode())
        print(path + " " + s.recv(65536).decode().split("\r\n")[0])
    except OSError as e:
        print(path + " error " + str(e))
for what in ("POST /v1/approvals/" + id + "/approve HTTP/1.0", "GET /metrics HTTP/1.0"):
    ask("/run/tine/ctl/tine.sock", what)
    ask(home + "/ctl/tine.sock", what)
    subprocess.call(["umount", "-l", home + "/ctl"], stderr=subprocess.DEVNULL)
    ask(home + "/ctl/tine.sock", what)
`

// Code inside a run that leaves its run's cgroup is still no person: it
// cannot approve its own pending merge on any socket it can reach, nor
// read the metrics, and nothing lands in the source. Confinement would stop
// the escape itself (TestConfine_ForkIsABoundary); it is off here, so the
// daemon's own test of who asks is what holds.
func TestControl_EscapedCgroupIsNoPerson(t *testing.T) {
	e, dir := liveWorkspace(t, false, map[string]string{"a.txt": "original\n", "tine.toml": "[confine]\noff = true\n"})
	d := e.serve()
	defer d.stop(t)
	e.ok("start", "source")
	e.ok("fork", "source")
	e.execSh("source-1", "echo mine > a.txt")
	out := e.ok("exec", "source-1", "--", "tine", "request", "merge")
	id := regexp.MustCompile(`pending as (a[0-9a-z]{8})`).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("request merge: %s", out)
	}
	out = e.ok("exec", "source-1", "--", "/usr/bin/python3", "-c", escapeScript, e.home, id[1])
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 7 || strings.Contains(lines[0], "/tine/") {
		t.Fatalf("the escape did not leave the run's cgroups or did not ask:\n%s", out)
	}
	// The third line is the people's socket reached at its host path once
	// the run's root unmounted what hid it: the namespaces still tell.
	if !strings.Contains(lines[3], " 403 ") {
		t.Errorf("the people's socket, reached from inside a run, answered %q", lines[3])
	}
	for _, l := range lines[1:] {
		if strings.Contains(l, " HTTP/1.") && !strings.Contains(l, " 403 ") {
			t.Errorf("code in a run outside its cgroup was answered %q", l)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "original\n" {
		t.Errorf("the fork approved its own merge: the source has %q\n%s", b, out)
	}
	var pending []tine.Approval
	e.okJSON(&pending, "pending", "--json")
	if len(pending) != 1 || pending[0].State != tine.ApprovalPending {
		t.Errorf("the request is no longer pending: %+v", pending)
	}
	// A person still approves it.
	e.ok("approve", id[1])
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "mine\n" {
		t.Errorf("after a person's approval the source has %q", b)
	}
}

// The metrics are a person's view: code in a run gets 403 on its socket.
func TestControl_MetricsNotFromARun(t *testing.T) {
	e, _ := liveWorkspace(t, false, map[string]string{"a.txt": "original\n"})
	d := e.serve()
	defer d.stop(t)
	e.ok("start", "source")
	if got := e.rawRequest("source", "GET", "/metrics"); !strings.Contains(got, "403") {
		t.Errorf("GET /metrics from inside a run got %q", got)
	}
	if body := d.metrics(t); !strings.Contains(body, "tine_") {
		t.Errorf("a person's /metrics:\n%s", body)
	}
}
