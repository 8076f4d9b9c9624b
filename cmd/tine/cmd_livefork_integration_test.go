//go:build linux && amd64

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/procfs"
	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/runtime"
	"github.com/tinehq/tine/supervisor"
)

// counterPy holds a random secret in memory and a counter, appending
// "secret counter" to out.txt (kept open) and to its stdout every 20 ms.
const counterPy = `import random, sys, time
secret = random.getrandbits(64)
n = 0
out = open("out.txt", "a")
while True:
    n += 1
    out.write(f"{secret} {n}\n"); out.flush()
    print(f"{secret} {n}", flush=True)
    time.sleep(0.02)
`

const counterToml = `[network]
isolate = true
[[service]]
name = "counter"
command = "exec /usr/bin/python3 counter.py"
`

// counterLines parses "secret counter" lines.
func counterLines(t *testing.T, path string) (secrets []string, counts []int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		n, _ := strconv.Atoi(f[1])
		secrets, counts = append(secrets, f[0]), append(counts, n)
	}
	return secrets, counts
}

// counterSource is a live workspace whose source runs the counter service
// (counterToml), started and past its first few lines; it returns the
// env and the workspace.
func counterSource(t *testing.T) (*env, string) {
	t.Helper()
	e, dir := liveWorkspace(t, true, map[string]string{"tine.toml": counterToml, "counter.py": counterPy})
	e.ok("start", "source")
	waitFor(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "out.txt"))
		return strings.Count(string(b), "\n") > 5
	})
	return e, dir
}

func TestLiveFork_Ptrace(t *testing.T) {
	e, dir := counterSource(t)
	parent := e.ps("source")
	var res engine.ForkResult
	e.okJSON(&res, "fork", "source", "--live", "ptrace", "--json")
	rep := res.Live[0]
	if !rep.Started || len(rep.Forked) != 1 || rep.Forked[0].Service != "counter" || len(rep.Restarted) != 0 {
		t.Fatalf("live fork report: %+v", rep)
	}
	t.Logf("parent paused %.2f ms while counter was forked live", rep.Forked[0].PauseMS)
	time.Sleep(500 * time.Millisecond)

	fork := e.path("source-1")
	srcSecrets, srcCounts := counterLines(t, filepath.Join(dir, "out.txt"))
	forkSecrets, forkCounts := counterLines(t, filepath.Join(fork, "out.txt"))
	secret := srcSecrets[0]
	// The fork's file is the version sealed at the fork point (counting
	// 1..K) followed by the child's lines, which count on by one from the
	// parent's counter at the injection (K < M: the parent ran for the
	// milliseconds between the seal and the injection), all with the
	// parent's secret.
	for i, s := range forkSecrets {
		if s != secret {
			t.Fatalf("fork's line %d has secret %s, want the parent's %s", i, s, secret)
		}
	}
	k := 1
	for k < len(forkCounts) && forkCounts[k] == forkCounts[k-1]+1 {
		k++
	}
	if forkCounts[0] != 1 || k == len(forkCounts) || forkCounts[k] <= forkCounts[k-1] || !strictlyCounting(forkCounts[k:]) {
		t.Errorf("fork's out.txt is not the sealed 1..K then the child counting on: %v", forkCounts)
	}
	if !strictlyCounting(srcCounts) {
		t.Errorf("the parent's counter does not count on by one: %v...", head(srcCounts))
	}
	if forkCounts[len(forkCounts)-1] <= srcCounts[0]+5 {
		t.Errorf("the fork did not go on counting: last %d", forkCounts[len(forkCounts)-1])
	}
	// Its writes landed only in its own view: the parent's file has each count once.
	if len(srcCounts) != srcCounts[len(srcCounts)-1] {
		t.Errorf("the parent's out.txt has %d lines up to count %d: the child wrote into it", len(srcCounts), srcCounts[len(srcCounts)-1])
	}
	// The parent runs on, unharmed, with its own stdout; the child has its own.
	after := e.ps("source")
	if len(after.Services) != 1 || after.Services[0].Pid != parent.Services[0].Pid || after.Services[0].State != "ready" {
		t.Errorf("parent's service after the live fork: %+v (before %+v)", after.Services, parent.Services)
	}
	_, parentLog := counterLines(t, filepath.Join(e.home, "workspaces", res.Parent.Workspace, "runs", res.Parent.ID, "logs", "counter.log"))
	childSecrets, childLog := counterLines(t, filepath.Join(e.home, "workspaces", res.Parent.Workspace, "runs", res.Forks[0].ID, "logs", "counter.log"))
	if len(childLog) == 0 || childSecrets[0] != secret || childLog[0] < forkCounts[0] {
		t.Errorf("the child's own stdout: %v with secrets %v", head(childLog), childSecrets[:min(len(childSecrets), 3)])
	}
	if parentLog[len(parentLog)-1] < childLog[0] {
		t.Errorf("the parent's stdout stopped at %d", parentLog[len(parentLog)-1])
	}
	ps := e.ps("source-1")
	if len(ps.Adopted) != 1 || ps.Adopted[0].Service != "counter" {
		t.Errorf("tine ps source-1 shows no live-forked counter: %+v", ps)
	}
	if out := e.ok("ps", "source-1"); !strings.Contains(out, "confined by the fork's ") || !strings.Contains(out, "mounts and setns among them") {
		t.Errorf("tine ps source-1 does not say the copy has the fork's confinement:\n%s", out)
	}
	// Stopping the fork ends its copy; the parent goes on. The copy is a
	// child of the parent's supervisor (a live fork clones with
	// CLONE_PARENT), which reaps it in its own time: right after tine stop
	// it may be a zombie still, never running.
	e.ok("stop", "source-1")
	cp := ps.Adopted[0]
	if st, err := procfs.Read("", cp.Pid); err == nil && st.StartTime == cp.Start && !st.Exited() {
		t.Errorf("the fork's live copy survived tine stop (state %c)", st.State)
	}
	waitFor(t, func() bool { return supervisor.StartTime(cp.Pid) != cp.Start }) // reaped
	if e.ps("source").Services[0].State != "ready" {
		t.Errorf("stopping the fork harmed the parent")
	}
}

// A fork's service carried live goes on when its origin stops: the copy
// ends with the origin's pid namespace, and tine stop of the origin starts
// the service again, fresh, in the fork (a new secret, counting from 1),
// where tine ps lists it as the fork's own and no longer the ended copy.
func TestLiveFork_PtraceOriginStops(t *testing.T) {
	e, dir := counterSource(t)
	var res engine.ForkResult
	e.okJSON(&res, "fork", "source", "--live", "ptrace", "--json")
	if rep := res.Live[0]; !rep.Started || len(rep.Forked) != 1 {
		t.Fatalf("live fork report: %+v", rep)
	}
	cp := e.ps("source-1").Adopted
	if len(cp) != 1 {
		t.Fatalf("tine ps source-1 shows no live-forked counter: %+v", cp)
	}
	secret, _ := counterLines(t, filepath.Join(dir, "out.txt"))
	e.ok("stop", "source")
	if procfs.Alive("", cp[0].Pid, cp[0].Start) {
		t.Fatalf("the copy %d outlived its origin's pid namespace", cp[0].Pid)
	}
	fork := filepath.Join(e.path("source-1"), "out.txt")
	waitFor(t, func() bool {
		s, c := counterLines(t, fork)
		return len(s) > 0 && s[len(s)-1] != secret[0] && c[len(c)-1] > 3
	})
	ps := e.ps("source-1")
	if ps.State != runtime.ProcRunning || len(ps.Adopted) != 0 || len(ps.Services) != 1 || ps.Services[0].Name != "counter" {
		t.Errorf("tine ps source-1 after its origin stopped: state %s, forked live %+v, services %+v", ps.State, ps.Adopted, ps.Services)
	}
	var evs []jsonEvent
	e.okJSON(&evs, "log", "source-1", "--json")
	if evs[len(evs)-1].Kind != "restart" {
		t.Errorf("last event of the fork: %s", evs[len(evs)-1].Kind)
	}
	if out := e.ok("ps", "source-1"); strings.Contains(out, "forked live") {
		t.Errorf("tine ps source-1 still shows a live-forked process:\n%s", out)
	}
}

func strictlyCounting(c []int) bool {
	for i := 1; i < len(c); i++ {
		if c[i] != c[i-1]+1 {
			return false
		}
	}
	return len(c) > 0
}

func head(c []int) []int { return c[:min(len(c), 5)] }

// Processes that cannot be forked live are restarted fresh instead, each
// with its reason, and the parent's processes are unharmed.
func TestLiveFork_Refusals(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	gobin := buildGoSleeper(t)
	files := map[string]string{
		"threads.py": "import threading, time\n" +
			"threading.Thread(target=lambda: [sum(range(1000)) for _ in iter(int, 1)], daemon=True).start()\n" +
			"while True: time.sleep(1)\n",
		"child.py": "import subprocess, time\nsubprocess.Popen(['sleep', '1000'])\nwhile True: time.sleep(1)\n",
		"sock.py": "import socket, time\nl = socket.socket(); l.bind(('127.0.0.1', 0)); l.listen()\n" +
			"c = socket.create_connection(l.getsockname()); a, _ = l.accept()\nl.close()\nwhile True: time.sleep(1)\n",
		"tine.toml": `[[service]]
name = "threads"
command = "exec /usr/bin/python3 threads.py"
[[service]]
name = "gosleeper"
command = "exec ` + gobin + `"
[[service]]
name = "child"
command = "exec /usr/bin/python3 child.py"
[[service]]
name = "sock"
command = "exec /usr/bin/python3 sock.py"
`,
	}
	e, _ := liveWorkspace(t, false, files)
	e.ok("start", "source")
	time.Sleep(500 * time.Millisecond) // the busy thread, the child and the connection exist
	before := e.ps("source")
	var res engine.ForkResult
	e.okJSON(&res, "fork", "source", "--live", "ptrace", "--json")
	rep := res.Live[0]
	want := map[string]string{"threads": "threads", "gosleeper": "threads", "child": "child process", "sock": "connected socket"}
	for svc, reason := range want {
		found := false
		for proc, why := range rep.Refused {
			if strings.HasPrefix(proc, svc+" ") {
				found = true
				if !strings.Contains(why, reason) {
					t.Errorf("%s refused for %q, want a reason mentioning %q", svc, why, reason)
				}
			}
		}
		if !found {
			t.Errorf("%s was not refused: %+v", svc, rep)
		}
	}
	if len(rep.Forked) != 0 || len(rep.Restarted) != 4 {
		t.Errorf("forked live %+v, restarted %v; want none live and all four restarted", rep.Forked, rep.Restarted)
	}
	out := e.ok("fork", "source", "--live", "ptrace")
	if !strings.Contains(out, "    threads: restarted: ") || !strings.Contains(out, "gosleeper: restarted: ") {
		t.Errorf("tine fork does not say what was refused and restarted:\n%s", out)
	}
	after := e.ps("source")
	for i, s := range before.Services {
		if after.Services[i].Pid != s.Pid || after.Services[i].State != "ready" {
			t.Errorf("parent's %s changed: %+v -> %+v", s.Name, s, after.Services[i])
		}
	}
	for _, f := range []string{"source-1", "source-2"} {
		ps := e.ps(f)
		for _, s := range ps.Services {
			if s.State != "ready" {
				t.Errorf("%s's restarted %s: %+v", f, s.Name, s)
			}
		}
	}
}

// buildGoSleeper builds a Go program that sleeps forever: multi-threaded
// by nature (the Go runtime's threads).
func buildGoSleeper(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	os.WriteFile(src, []byte("package main\n\nimport \"time\"\n\nfunc main() { for { time.Sleep(time.Second) } }\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module sleeper\n\ngo 1.21\n"), 0o644)
	bin := filepath.Join(dir, "gosleeper")
	cmd := exec.Command(testkit.GoTool(), "build", "-buildvcs=false", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the Go sleeper: %v\n%s", err, out)
	}
	return bin
}

// --live=criu is offered only when criu check passes; otherwise the fork
// says why and starts its services fresh.
func TestLiveFork_CRIUFallback(t *testing.T) {
	e, _ := liveWorkspace(t, false, map[string]string{"tine.toml": "[[service]]\nname = \"s\"\ncommand = \"exec sleep 1000\"\n"})
	if exec.Command("criu", "check").Run() == nil {
		t.Skip("criu check passes on this host; the fallback is not taken")
	}
	e.ok("start", "source")
	var res engine.ForkResult
	e.okJSON(&res, "fork", "source", "--live", "criu", "--json")
	rep := res.Live[0]
	why := rep.Refused["criu"]
	if why == "" || rep.Mode != engine.LiveRerun || len(rep.Restarted) != 1 || !rep.Started {
		t.Fatalf("criu fallback: %+v", rep)
	}
	t.Logf("criu refused: %s", why)
	if ps := e.ps("source-1"); len(ps.Services) != 1 || ps.Services[0].State != "ready" {
		t.Errorf("fork's service after the fallback: %+v", ps.Services)
	}
}

// hostProcProbe says, from inside a run, whether the host's /proc can be
// read: a process that lives only on the host (pid, its command line
// holding marker) found under the state directory (where the run's
// supervisor directory is), or beneath the run's own /proc, uncovered in
// a mount namespace of the probe's own (where the run may unmount).
func hostProcProbe(home string, pid int, marker string) string {
	p := strconv.Itoa(pid)
	return `
found=$(find ` + home + ` -maxdepth 8 -path '*/` + p + `/cmdline' 2>/dev/null | head -1)
if [ -n "$found" ] && tr '\0' ' ' < "$found" | grep -q ` + marker + `; then echo state-shows-host; else echo state-clean; fi
if unshare -m sh -c 'umount -l /proc' 2>/dev/null; then
  unshare -m sh -c 'umount -l /proc; tr "\0" " " < /proc/` + p + `/cmdline 2>/dev/null | grep -q ` + marker + `' && echo beneath-shows-host || echo beneath-clean
else echo umount-refused; fi`
}

// Inside a root-owned source the host's /proc is nowhere: not under the
// run's directories, not beneath the run's own /proc; a live fork still
// carries its process, and leaves nothing of the fork's namespaces
// mounted in the parent.
func TestLiveFork_HostProcHidden(t *testing.T) {
	e, _ := counterSource(t)
	const marker = "987.654"
	host := exec.Command("sleep", marker)
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Process.Kill(); host.Wait() })
	probe := hostProcProbe(e.home, host.Process.Pid, marker)
	if got := strings.Fields(e.execSh("live/source", probe)); strings.Join(got, " ") != "state-clean beneath-clean" {
		t.Errorf("inside the source: %q, want the host's /proc hidden", got)
	}
	var res engine.ForkResult
	e.okJSON(&res, "fork", "source", "--live", "ptrace", "--json")
	if rep := res.Live[0]; !rep.Started || len(rep.Forked) != 1 || rep.Forked[0].Service != "counter" {
		t.Fatalf("live fork report: %+v", rep)
	}
	if got := strings.Fields(e.execSh("live/source-1", probe)); strings.Join(got, " ") != "state-clean umount-refused" {
		t.Errorf("inside the fork: %q, want the host's /proc hidden", got)
	}
	left := e.execSh("live/source", `grep -c livefork-ns /proc/self/mountinfo || true; ls -A `+filepath.Join(e.home, "workspaces", res.Parent.Workspace, "runs", res.Parent.ID, "sup"))
	if !strings.HasPrefix(left, "0\n") || strings.Contains(left, "livefork-ns") {
		t.Errorf("the live fork left namespace files in the parent's mounts or sup directory:\n%s", left)
	}
}
