package livefork

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// counterSetup is a ticking python process in the original namespace with
// workspace ws, and a target run whose view of ws is fork.
type counterSetup struct {
	ws, fork, dir string
	parentLog     string
	pid, target   int
}

func newCounter(t *testing.T, interval, mode string) *counterSetup {
	t.Helper()
	requireLiveFork(t)
	c := &counterSetup{ws: t.TempDir(), fork: t.TempDir(), dir: t.TempDir()}
	c.parentLog = filepath.Join(c.dir, "parent.log")
	script := writeScript(t, counterPy)
	out := filepath.Join(c.ws, "out.txt")
	c.pid = start(t, c.ws, c.parentLog, python, script, out, interval, mode).Process.Pid
	c.target = targetRun(t, c.ws, c.fork, false)
	waitLine(t, c.parentLog, " 1\n")
	return c
}

func (c *counterSetup) targetFor(extra func(*Target)) Target {
	tg := Target{
		MountNS:   procPath(c.target, "ns", "mnt"),
		Workspace: c.ws,
		Stdout:    filepath.Join(c.dir, "child.log"),
		Stderr:    filepath.Join(c.dir, "child.log"),
	}
	if extra != nil {
		extra(&tg)
	}
	return tg
}

func TestFork_CounterAndSecret(t *testing.T) {
	c := newCounter(t, "0.05", "sleep")
	waitLine(t, c.parentLog, " 5\n")
	data, err := os.ReadFile(filepath.Join(c.ws, "out.txt"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(c.fork, "out.txt"), string(data)) // the fork's copy of the files
	cg := cgroup(t, "/sys/fs/cgroup/pids")
	tg := c.targetFor(func(tg *Target) { tg.CgroupProcs = []string{filepath.Join(cg, "cgroup.procs")} })

	secret, before := ticks(t, c.parentLog)
	res, err := forkOne(t, c.pid, tg)
	if err != nil {
		t.Fatalf("Fork: %v", err)
	}
	_, atFork := ticks(t, c.parentLog)
	t.Logf("pause %v (pid %d -> child %d)", res.Pause, res.Pid, res.Child)
	time.Sleep(600 * time.Millisecond)

	childSecret, child := ticks(t, tg.Stdout)
	if childSecret != secret || len(child) < 3 {
		t.Fatalf("child log: secret %q (parent %q), %d lines", childSecret, secret, len(child))
	}
	if child[0] < last(before) || child[0] > last(atFork)+1 {
		t.Errorf("child starts at %d; parent was at %d..%d", child[0], last(before), last(atFork))
	}
	_, after := ticks(t, c.parentLog)
	if last(after) < last(atFork)+5 {
		t.Errorf("parent stalled: %d at fork, %d now", last(atFork), last(after))
	}
	assertSequence(t, c.parentLog)
	assertSequence(t, filepath.Join(c.ws, "out.txt")) // only the parent writes here
	_, forked := ticks(t, filepath.Join(c.fork, "out.txt"))
	if last(forked) < child[len(child)-1] {
		t.Errorf("fork's out.txt ends at %d, child printed %d", last(forked), child[len(child)-1])
	}
	procs, _ := os.ReadFile(tg.CgroupProcs[0])
	if !strings.Contains(" "+strings.Join(strings.Fields(string(procs)), " ")+" ", fmt.Sprintf(" %d ", res.Child)) {
		t.Errorf("child %d not in %s: %q", res.Child, tg.CgroupProcs[0], procs)
	}
	alive(t, c.pid)
	alive(t, res.Child)
}

// assertSequence checks that a counter file counts 1, 2, 3... without a
// repeated line, so no second writer appended to it.
func assertSequence(t *testing.T, path string) {
	t.Helper()
	_, ns := ticks(t, path)
	for i, n := range ns {
		if n != i+1 {
			t.Fatalf("%s: line %d is %d: a second writer", path, i+1, n)
		}
	}
}

// TestFork_BlockedInSyscall forks a process while it waits in
// clock_nanosleep (restarted via -ERESTARTNOHAND or -ERESTART_RESTARTBLOCK)
// or poll (-ERESTART_RESTARTBLOCK): both processes must wake and go on.
func TestFork_BlockedInSyscall(t *testing.T) {
	for _, mode := range []string{"sleep", "poll"} {
		t.Run(mode, func(t *testing.T) {
			c := newCounter(t, "1", mode)
			time.Sleep(300 * time.Millisecond) // well inside the wait
			tg := c.targetFor(nil)
			writeFile(t, filepath.Join(c.fork, "out.txt"), "")
			res, err := forkOne(t, c.pid, tg)
			if err != nil {
				t.Fatalf("Fork: %v", err)
			}
			_, atFork := ticks(t, c.parentLog)
			time.Sleep(2500 * time.Millisecond)
			_, parent := ticks(t, c.parentLog)
			_, child := ticks(t, tg.Stdout)
			if len(parent)-len(atFork) < 2 || len(child) < 2 {
				log, _ := os.ReadFile(tg.Stdout)
				t.Fatalf("after fork: parent +%d ticks, child %d ticks; child log:\n%s", len(parent)-len(atFork), len(child), log)
			}
			t.Logf("pause %v; child ticks %v", res.Pause, child)
			alive(t, c.pid)
			alive(t, res.Child)
		})
	}
}

// TestFork_SignalsDuringInjection sends SIGUSR1 to the parent all through
// the fork: the signals caught in ptrace stops are delivered afterwards and
// the injection is unaffected.
func TestFork_SignalsDuringInjection(t *testing.T) {
	c := newCounter(t, "0.05", "sleep")
	writeFile(t, filepath.Join(c.fork, "out.txt"), "")
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				unix.Kill(c.pid, unix.SIGUSR1)
				time.Sleep(50 * time.Microsecond)
			}
		}
	}()
	tg := c.targetFor(nil)
	res, err := forkOne(t, c.pid, tg)
	close(stop)
	<-done
	if err != nil {
		t.Fatalf("Fork: %v", err)
	}
	waitLine(t, c.parentLog, "usr1")
	c.assertTicking(t)
	waitFor(t, "child ticks", func() bool { _, n := ticks(t, tg.Stdout); return len(n) >= 3 })
	t.Logf("pause %v", res.Pause)
}

func TestCheck_Refusals(t *testing.T) {
	requireLiveFork(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	for _, tc := range []struct {
		name, want string
		cmd        func(t *testing.T) []string
	}{
		{"thread", "2 threads", pyCmd("import threading, time\nthreading.Thread(target=time.sleep, args=(1000,)).start()\ntime.sleep(1000)")},
		{"go", " threads", goCmd},
		{"child", "has child processes (pids ", func(*testing.T) []string { return []string{"sh", "-c", "sleep 1000 & wait"} }},
		{"connected", "connected socket on fd 3", pyCmd("import socket, time\ns = socket.create_connection(('127.0.0.1', " + port + "))\ntime.sleep(1000)")},
		{"unix", "unix socket on fd 3", pyCmd("import socket, time\na, b = socket.socketpair()\ntime.sleep(1000)")},
		{"udp", "UDP socket on fd 3", pyCmd("import socket, time\ns = socket.socket(type=socket.SOCK_DGRAM)\ntime.sleep(1000)")},
		{"dontfork", "MADV_DONTFORK memory", pyCmd("import mmap, time\nm = mmap.mmap(-1, 4096)\nm.madvise(mmap.MADV_DONTFORK)\ntime.sleep(1000)")},
		{"epoll", "epoll instance on fd 3", pyCmd("import select, time\ne = select.epoll()\ntime.sleep(1000)")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			argv := tc.cmd(t)
			pid := start(t, "/", "", argv[0], argv[1:]...).Process.Pid
			var err error
			waitFor(t, "refusal "+tc.want, func() bool {
				err = Check(pid)
				return err != nil && strings.Contains(err.Error(), tc.want)
			})
			var refused *RefusedError
			if !errors.As(err, &refused) {
				t.Fatalf("Check = %v, want a *RefusedError", err)
			}
			t.Logf("%v", err)
			res, ferr := forkWithoutCheck(t, pid)
			if !errors.As(ferr, &refused) || res.Child != 0 {
				t.Fatalf("Fork = %+v, %v; want a refusal", res, ferr)
			}
			alive(t, pid)
		})
	}
}

// forkWithoutCheck calls Fork on a process Check refused: Fork checks again.
func forkWithoutCheck(t *testing.T, pid int) (Result, error) {
	s, err := Seize([]int{pid})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	return s.Fork(pid, Target{MountNS: "/proc/self/ns/mnt", Workspace: "/nonexistent"})
}

func pyCmd(src string) func(*testing.T) []string {
	return func(*testing.T) []string { return []string{python, "-c", src} }
}

func goCmd(t *testing.T) []string {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("requires the go tool")
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.go"), "package main\n\nimport \"time\"\n\nfunc main() { time.Sleep(1000 * time.Second) }\n")
	cmd := exec.Command(gobin, "build", "-o", "sleeper", "main.go")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GO111MODULE=off", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	return []string{filepath.Join(dir, "sleeper")}
}

// listenerSetup is a python server on 127.0.0.1:port in its own network
// namespace, and a target run with its own mount and network namespace.
type listenerSetup struct {
	ws, dir     string
	port        int
	pid, target int
	serverLog   string
}

func newListener(t *testing.T) *listenerSetup {
	requireLiveFork(t)
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("requires ip")
	}
	l := &listenerSetup{ws: t.TempDir(), dir: t.TempDir(), port: 4711}
	l.serverLog = filepath.Join(l.dir, "server.log")
	script := writeScript(t, serverPy)
	sh := fmt.Sprintf("ip link set lo up && exec %s %s %d", python, script, l.port)
	l.pid = start(t, l.ws, l.serverLog, "unshare", "--net", "sh", "-c", sh).Process.Pid
	waitLine(t, l.serverLog, "ready")
	l.target = targetRun(t, l.ws, t.TempDir(), true)
	return l
}

// ask connects to the server port inside pid's network namespace and
// returns the pid that answered.
func (l *listenerSetup) ask(t *testing.T, nsPid int) int {
	t.Helper()
	src := fmt.Sprintf("import socket; print(socket.create_connection(('127.0.0.1', %d), timeout=5).recv(64).decode())", l.port)
	out, err := exec.Command("nsenter", "-t", strconv.Itoa(nsPid), "-n", python, "-c", src).CombinedOutput()
	if err != nil {
		t.Fatalf("connect in netns of %d: %v: %s", nsPid, err, out)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("answer %q", out)
	}
	return n
}

func TestFork_Listener(t *testing.T) {
	t.Run("OwnNetNS", func(t *testing.T) {
		l := newListener(t)
		res, err := forkOne(t, l.pid, Target{
			MountNS: procPath(l.target, "ns", "mnt"), NetNS: procPath(l.target, "ns", "net"),
			Workspace: l.ws, Stdout: filepath.Join(l.dir, "child.log"),
		})
		if err != nil {
			t.Fatalf("Fork: %v", err)
		}
		t.Logf("pause %v", res.Pause)
		if got := l.ask(t, l.target); got != res.Child {
			t.Errorf("fork's port answered by %d, want the child %d", got, res.Child)
		}
		if got := l.ask(t, l.pid); got != l.pid {
			t.Errorf("origin's port answered by %d, want the parent %d", got, l.pid)
		}
	})
	t.Run("SameNetNS", func(t *testing.T) {
		l := newListener(t)
		res, err := forkOne(t, l.pid, Target{MountNS: procPath(l.target, "ns", "mnt"), Workspace: l.ws})
		want := fmt.Sprintf("listener on :%d needs the fork's own network namespace", l.port)
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, unix.EADDRINUSE) {
			t.Fatalf("Fork = %v, want %q", err, want)
		}
		t.Logf("%v", err)
		gone(t, res.Child)
		alive(t, l.pid)
		if got := l.ask(t, l.pid); got != l.pid {
			t.Errorf("origin's port answered by %d, want the parent %d", got, l.pid)
		}
	})
}

// TestFork_ErrorRestores fails a fork in the child (no such mount
// namespace) and in the parent (clone refused by pids.max): the parent
// goes on ticking and no child is left.
func TestFork_ErrorRestores(t *testing.T) {
	t.Run("InChild", func(t *testing.T) {
		c := newCounter(t, "0.05", "sleep")
		res, err := forkOne(t, c.pid, c.targetFor(func(tg *Target) { tg.MountNS = "/nonexistent/ns/mnt" }))
		if err == nil || !errors.Is(err, unix.ENOENT) || res.Child == 0 {
			t.Fatalf("Fork = %+v, %v; want ENOENT from the child", res, err)
		}
		t.Logf("%v", err)
		c.assertTicking(t)
		gone(t, res.Child)
	})
	t.Run("InParent", func(t *testing.T) {
		c := newCounter(t, "0.05", "sleep")
		cg := cgroup(t, "/sys/fs/cgroup/pids")
		writeFile(t, filepath.Join(cg, "pids.max"), "1")
		writeFile(t, filepath.Join(cg, "cgroup.procs"), strconv.Itoa(c.pid))
		res, err := forkOne(t, c.pid, c.targetFor(nil))
		if err == nil || !errors.Is(err, unix.EAGAIN) || res.Child != 0 {
			t.Fatalf("Fork = %+v, %v; want EAGAIN from clone", res, err)
		}
		t.Logf("%v", err)
		c.assertTicking(t)
		writeFile(t, "/sys/fs/cgroup/pids/cgroup.procs", strconv.Itoa(c.pid))
	})
}

func (c *counterSetup) assertTicking(t *testing.T) {
	t.Helper()
	_, before := ticks(t, c.parentLog)
	time.Sleep(300 * time.Millisecond)
	_, after := ticks(t, c.parentLog)
	if last(after) < last(before)+3 {
		t.Fatalf("parent stalled at %d (was %d)", last(after), last(before))
	}
	assertSequence(t, c.parentLog)
	alive(t, c.pid)
}

// TestSeize_Frozen seizes a process frozen by the cgroup freezer, thaws it
// and forks it, as the engine does.
func TestSeize_Frozen(t *testing.T) {
	for _, tc := range []struct{ name, root, file, frozen, thawed, state, want string }{
		{"v1", "/sys/fs/cgroup/freezer", "freezer.state", "FROZEN", "THAWED", "freezer.state", "FROZEN"},
		{"v2", "/sys/fs/cgroup/unified", "cgroup.freeze", "1", "0", "cgroup.events", "frozen 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCounter(t, "0.05", "sleep")
			cg := cgroup(t, tc.root)
			writeFile(t, filepath.Join(cg, "cgroup.procs"), strconv.Itoa(c.pid))
			writeFile(t, filepath.Join(cg, tc.file), tc.frozen)
			thaw := func() { writeFile(t, filepath.Join(cg, tc.file), tc.thawed) }
			defer thaw()
			waitFor(t, "frozen", func() bool {
				data, _ := os.ReadFile(filepath.Join(cg, tc.state))
				return strings.Contains(string(data), tc.want)
			})
			if err := Check(c.pid); err != nil {
				t.Fatalf("Check of frozen process: %v", err)
			}
			s, err := Seize([]int{c.pid})
			if err != nil {
				t.Fatalf("Seize of frozen process: %v", err)
			}
			defer s.Close()
			thaw()
			tg := c.targetFor(nil)
			writeFile(t, filepath.Join(c.fork, "out.txt"), "")
			res, err := s.Fork(c.pid, tg)
			t.Cleanup(func() { reap(res.Child) })
			if err != nil {
				t.Fatalf("Fork after thaw: %v", err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			waitLine(t, tg.Stdout, "\n")
			c.assertTicking(t)
		})
	}
}

// BenchmarkPause measures the parent's pause (Result.Pause, as pause-ms)
// for a python process holding 10 MiB and 1 GiB of freshly written memory,
// in 4 KiB pages and in transparent huge pages. The process writes to all
// its pages again before each fork, as a live process would have.
func BenchmarkPause(b *testing.B) {
	requireLiveFork(b)
	for _, tc := range []struct {
		mib   int
		pages string
	}{{10, "4k"}, {1024, "4k"}, {1024, "thp"}, {4096, "4k"}, {4096, "thp"}} {
		b.Run(fmt.Sprintf("%dMiB-%s", tc.mib, tc.pages), func(b *testing.B) {
			benchPause(b, tc.mib, tc.pages)
		})
		b.Run(fmt.Sprintf("%dMiB-%s-rerun", tc.mib, tc.pages), func(b *testing.B) {
			benchRerun(b, tc.mib, tc.pages)
		})
	}
}

// benchRerun measures the alternative to a live fork: starting the same
// process afresh until it holds its memory again (its state is lost).
func benchRerun(b *testing.B, mib int, pages string) {
	ws, dir := b.TempDir(), b.TempDir()
	script := writeScript(b, allocPy)
	for i := 0; i < b.N; i++ {
		log := filepath.Join(dir, fmt.Sprintf("alloc-%d.log", i))
		cmd := start(b, ws, log, python, script, strconv.Itoa(mib), pages)
		waitLine(b, log, "touched 1\n")
		b.StopTimer()
		unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
		cmd.Wait()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "restart-ms")
}

func benchPause(b *testing.B, mib int, pages string) {
	ws, dir := b.TempDir(), b.TempDir()
	log := filepath.Join(dir, "alloc.log")
	pid := start(b, ws, log, python, writeScript(b, allocPy), strconv.Itoa(mib), pages).Process.Pid
	target := targetRun(b, ws, b.TempDir(), false)
	tg := Target{MountNS: procPath(target, "ns", "mnt"), Workspace: ws, Stdout: filepath.Join(dir, "child.log")}
	var total, worst time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if i > 0 {
			unix.Kill(pid, unix.SIGUSR1)
		}
		waitLine(b, log, fmt.Sprintf("touched %d\n", i+1))
		b.StartTimer()
		s, err := Seize([]int{pid})
		if err != nil {
			b.Fatal(err)
		}
		res, err := s.Fork(pid, tg)
		s.Close()
		reap(res.Child)
		if err != nil {
			b.Fatal(err)
		}
		total += res.Pause
		worst = max(worst, res.Pause)
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "pause-ms")
	b.ReportMetric(float64(worst.Microseconds())/1000, "max-pause-ms")
}
