package livefork

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tinehq/tine/internal/testkit"
	"golang.org/x/sys/unix"
)

const python = "/usr/bin/python3"

// counterPy ticks: every interval it appends "secret n" to the file argv[1]
// (kept open) and prints it; on SIGUSR1 it prints "usr1". Mode "poll" waits in poll(2) instead of sleeping.
const counterPy = `import os, secrets, select, signal, sys, time
signal.signal(signal.SIGUSR1, lambda *_: os.write(1, b"usr1\n"))
secret = secrets.token_hex(8)
out = open(sys.argv[1], "a", buffering=1)
interval, mode = float(sys.argv[2]), sys.argv[3]
n = 0
while True:
    n += 1
    out.write(f"{secret} {n}\n")
    os.write(1, f"{secret} {n}\n".encode())  # one write: the USR1 handler's cannot land inside it
    if mode == "poll":
        select.poll().poll(int(interval * 1000))
    else:
        time.sleep(interval)
`

// serverPy listens on 127.0.0.1:argv[1] and answers each connection with
// its pid.
const serverPy = `import os, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(16)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    c.sendall(f"{os.getpid()}\n".encode())
    c.close()
`

// allocPy holds argv[1] MiB of memory, in 4 KiB pages or, with argv[2]
// "thp", in transparent huge pages. It writes to every page at start and
// on each SIGUSR1, so that a fork must write-protect all of them again.
const allocPy = `import mmap, signal, sys, time
size = int(sys.argv[1]) << 20
if sys.argv[2] == "thp":
    b = mmap.mmap(-1, size)
    b.madvise(mmap.MADV_HUGEPAGE)
else:
    b = bytearray(size)
gen = 0
def touch(*_):
    global gen
    gen += 1
    for i in range(0, size, 4096):
        b[i] = gen & 0xff
    print(f"touched {gen}", flush=True)
signal.signal(signal.SIGUSR1, touch)
touch()
while True:
    time.sleep(1)
`

// requireLiveFork skips unless the machine can live-fork: root, and the
// tools the tests' processes use.
func requireLiveFork(tb testing.TB) {
	tb.Helper()
	testkit.RequireRoot(tb, "ptrace, namespaces and bind mounts")
	for _, tool := range []string{python, "unshare", "nsenter", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			tb.Skipf("requires %s", tool)
		}
	}
}

func writeScript(tb testing.TB, body string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "script.py")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

// start runs a command in its own process group with stdout and stderr in
// log (if not empty) and kills the group at cleanup.
func start(tb testing.TB, dir, log string, name string, args ...string) *exec.Cmd {
	tb.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	if log != "" {
		f, err := os.Create(log)
		if err != nil {
			tb.Fatal(err)
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		unix.Kill(-cmd.Process.Pid, unix.SIGKILL) // its own children too
		cmd.Wait()
	})
	return cmd
}

// reap kills pid, one of ours by CLONE_PARENT, and collects it.
func reap(pid int) {
	if pid > 0 {
		unix.Kill(pid, unix.SIGKILL)
		unix.Wait4(pid, nil, 0, nil)
	}
}

func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
	}
}

func waitLine(tb testing.TB, log, want string) {
	tb.Helper()
	waitFor(tb, want+" in "+log, func() bool {
		data, _ := os.ReadFile(log)
		return bytes.Contains(data, []byte(want))
	})
}

// targetRun starts a process in its own mount namespace (and network
// namespace, with lo up) in which fork is bind-mounted over ws, as a run's
// supervisor holds the fork's namespaces. It returns the process's pid.
func targetRun(tb testing.TB, ws, fork string, net bool) int {
	tb.Helper()
	args := []string{"--mount", "--propagation", "private"}
	script := "exec sleep 1000"
	if net {
		args = append(args, "--net")
		script = "ip link set lo up && " + script
	}
	cmd := start(tb, "/", "", "unshare", append(args, "sh", "-c", script)...)
	pid := cmd.Process.Pid
	waitFor(tb, "target run", func() bool {
		comm, _ := os.ReadFile(procPath(pid, "comm"))
		return strings.TrimSpace(string(comm)) == "sleep"
	})
	out, err := exec.Command("nsenter", "-t", strconv.Itoa(pid), "-m", "mount", "--bind", fork, ws).CombinedOutput()
	if err != nil {
		tb.Fatalf("bind mount in target run: %v: %s", err, out)
	}
	return pid
}

// ticks parses a counter log: its secret and counters in order.
func ticks(tb testing.TB, path string) (string, []int) {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var secret string
	var ns []int
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			tb.Fatalf("%s: bad line %q", path, line)
		}
		if secret == "" {
			secret = f[0]
		} else if f[0] != secret {
			tb.Fatalf("%s: secret changed from %s to %s", path, secret, f[0])
		}
		ns = append(ns, n)
	}
	return secret, ns
}

func last(ns []int) int {
	if len(ns) == 0 {
		return 0
	}
	return ns[len(ns)-1]
}

// alive checks that pid runs untraced and unstopped.
func alive(tb testing.TB, pid int) {
	tb.Helper()
	st, err := readStatus(pid)
	if err != nil {
		tb.Fatalf("pid %d: %v", pid, err)
	}
	if st.tracer != 0 || st.state == 'Z' || st.state == 'T' || st.state == 't' {
		tb.Fatalf("pid %d: state %c, tracer %d", pid, st.state, st.tracer)
	}
}

// gone checks that pid no longer exists (not even as a zombie).
func gone(tb testing.TB, pid int) {
	tb.Helper()
	if pid == 0 {
		return
	}
	if err := unix.Kill(pid, 0); err != unix.ESRCH {
		tb.Fatalf("pid %d still exists (kill: %v)", pid, err)
	}
}

// forkOne runs the caller's sequence for one process: Check, Seize, Fork,
// Close. The child is reaped at cleanup.
func forkOne(tb testing.TB, pid int, t Target) (Result, error) {
	tb.Helper()
	if err := Check(pid); err != nil {
		return Result{Pid: pid}, err
	}
	s, err := Seize([]int{pid})
	if err != nil {
		tb.Fatal(err)
	}
	res, err := s.Fork(pid, t)
	if cerr := s.Close(); cerr != nil {
		tb.Errorf("Close: %v", cerr)
	}
	tb.Cleanup(func() { reap(res.Child) })
	return res, err
}

// cgroup makes a v1 cgroup under the hierarchy root and removes it at
// cleanup, killing what is left in it.
func cgroup(tb testing.TB, root string) string {
	tb.Helper()
	if _, err := os.Stat(root); err != nil {
		tb.Skipf("no cgroup hierarchy at %s", root)
	}
	dir := filepath.Join(root, fmt.Sprintf("tine-livefork-%d", time.Now().UnixNano()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		data, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		for _, f := range strings.Fields(string(data)) {
			n, _ := strconv.Atoi(f)
			reap(n)
		}
		for i := 0; i < 50 && os.Remove(dir) != nil; i++ {
			time.Sleep(20 * time.Millisecond)
		}
	})
	return dir
}

func writeFile(tb testing.TB, path, data string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		tb.Fatal(err)
	}
}
