package supervisor

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/internal/tty"
)

func TestMain(m *testing.M) {
	if IsSupervisor() { // the test binary re-executed by Launch, as tine is
		Main()
	}
	os.Exit(m.Run())
}

// rootWhy says why this package's tests need root.
const rootWhy = "supervisors create mount, pid, uts and ipc namespaces"

// launch starts a supervisor whose run sees view at a workspace path.
func launch(t *testing.T, net bool) (Spec, int, *Client) {
	t.Helper()
	testkit.RequireRoot(t, rootWhy)
	root := t.TempDir()
	spec := Spec{Run: "rtest", Hostname: "test-run", Dir: filepath.Join(root, "sup"), LogDir: filepath.Join(root, "logs"),
		View: filepath.Join(root, "view"), Workspace: filepath.Join(root, "ws"), Net: net, Env: os.Environ()}
	os.MkdirAll(spec.View, 0o755)
	os.MkdirAll(spec.Workspace, 0o755)
	os.WriteFile(filepath.Join(spec.View, "f"), []byte("run's file\n"), 0o644)
	os.WriteFile(filepath.Join(spec.Workspace, "f"), []byte("host's file\n"), 0o644)
	var setupPid int
	pid, err := Launch(context.Background(), spec, func(p int) error { setupPid = p; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if setupPid != pid {
		t.Errorf("setup got pid %d, Launch returned %d", setupPid, pid)
	}
	c := NewClient(spec.Dir)
	t.Cleanup(func() {
		c.Stop(context.Background(), time.Second)
		syscall.Kill(pid, syscall.SIGKILL)
	})
	return spec, pid, c
}

// run execs a shell command in the run and returns its output and status.
func run(t *testing.T, c *Client, spec Spec, script string) (string, int) {
	t.Helper()
	r, w, _ := os.Pipe()
	null, _ := os.Open(os.DevNull)
	defer null.Close()
	out := make(chan string)
	go func() { b, _ := io.ReadAll(r); out <- string(b) }()
	code, err := c.Exec(context.Background(), Exec{Args: []string{"sh", "-c", script}, Env: os.Environ(), Dir: spec.Workspace},
		[3]*os.File{null, w, w}, nil, nil)
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return <-out, code
}

func TestSupervisor_Exec(t *testing.T) {
	spec, pid, c := launch(t, false)
	if p, alive, _ := Pid(spec.Dir); !alive || p != pid {
		t.Fatalf("Pid = %d, %v; want %d alive", p, alive, pid)
	}
	out, code := run(t, c, spec, `cat f; hostname; echo $$; exit 7`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 7 || len(lines) != 3 || lines[0] != "run's file" || lines[1] != "test-run" {
		t.Fatalf("exec: status %d, output %q", code, out)
	}
	// In its own pid namespace, from PidBase up (CRIU restores pids there).
	if n, err := strconv.Atoi(lines[2]); err != nil || n < PidBase || n > PidBase+100 {
		t.Errorf("pid inside the run's pid namespace = %s, want one just above %d", lines[2], PidBase)
	}
	if b, _ := os.ReadFile(filepath.Join(spec.Workspace, "f")); string(b) != "host's file\n" {
		t.Errorf("host's workspace changed: %q", b)
	}
	if _, code := run(t, c, spec, `exec no-such-command-xyz`); code != 127 {
		t.Errorf("missing command: status %d, want 127", code)
	}
}

// execTty runs args in the run on a new terminal of size (30, 100) and
// returns its status and everything it wrote; typed is typed into the
// terminal once it runs.
func execTty(t *testing.T, c *Client, spec Spec, typed string, args ...string) (int, string) {
	t.Helper()
	master, slave, err := tty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	if err := tty.SetSize(master, tty.Size{Rows: 30, Cols: 100}); err != nil {
		t.Fatal(err)
	}
	out := make(chan string)
	go func() { b, _ := io.ReadAll(master); out <- string(b) }() // ends with EIO once no slave is open
	code, err := c.Exec(context.Background(), Exec{Args: args, Env: os.Environ(), Dir: spec.Workspace, Tty: true},
		[3]*os.File{slave, slave, slave}, nil, func(int) {
			slave.Close()
			master.Write([]byte(typed))
		})
	slave.Close()
	if err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-out:
		return code, s
	case <-time.After(10 * time.Second):
		t.Fatal("the terminal stayed open after the command ended")
	}
	return 0, ""
}

// With Tty the command leads its own session on the terminal, as its
// foreground group, and the terminal's line discipline signals it.
func TestSupervisor_ExecTty(t *testing.T) {
	spec, _, c := launch(t, false)
	code, out := execTty(t, c, spec, "", "sh", "-c", `set -- $(cat /proc/$$/stat); echo "pid=$1 sid=$6 tpgid=$8 tty=$7"; stty size; exit 3`)
	var pid, sid, tpgid, ttyNr int
	if _, err := fmt.Sscanf(out, "pid=%d sid=%d tpgid=%d tty=%d", &pid, &sid, &tpgid, &ttyNr); err != nil || code != 3 {
		t.Fatalf("status %d, output %q (%v)", code, out, err)
	}
	if sid != pid || tpgid != pid || ttyNr == 0 {
		t.Errorf("pid %d, session %d, foreground group %d, tty %d: want a session leader in the foreground of its terminal", pid, sid, tpgid, ttyNr)
	}
	if !strings.Contains(out, "30 100\r\n") {
		t.Errorf("stty size in the run: %q, want 30 100", out)
	}
	// ^C typed into the terminal interrupts its foreground process.
	if code, out := execTty(t, c, spec, "\x03", "sleep", "100"); code != 128+int(syscall.SIGINT) {
		t.Errorf("^C: status %d (output %q), want %d", code, out, 128+int(syscall.SIGINT))
	}
	// Without Tty the command has no controlling terminal.
	if out, _ := run(t, c, spec, `set -- $(cat /proc/$$/stat); echo $7`); strings.TrimSpace(out) != "0" {
		t.Errorf("tty_nr without Tty = %q, want 0", out)
	}
}

func TestSupervisor_ExecSignal(t *testing.T) {
	spec, _, c := launch(t, false)
	null, _ := os.Open(os.DevNull)
	defer null.Close()
	sigs := make(chan os.Signal, 1)
	started := make(chan int, 1)
	go func() { <-started; sigs <- syscall.SIGTERM }()
	code, err := c.Exec(context.Background(), Exec{Args: []string{"sleep", "30"}, Env: os.Environ(), Dir: spec.Workspace},
		[3]*os.File{null, null, null}, sigs, func(pid int) { started <- pid })
	if err != nil || code != 128+int(syscall.SIGTERM) {
		t.Errorf("signalled exec = %d, %v; want %d", code, err, 128+int(syscall.SIGTERM))
	}
}

func TestSupervisor_Services(t *testing.T) {
	spec, _, c := launch(t, false)
	port := freePort(t)
	os.WriteFile(filepath.Join(spec.View, "index.html"), []byte("hello from the run\n"), 0o644)
	svcs := []Service{
		{Name: "web", Command: fmt.Sprintf("exec python3 -m http.server %d --bind 127.0.0.1", port), Dir: spec.Workspace,
			ReadyPort: port, ReadyTimeout: 10 * time.Second},
		{Name: "tick", Command: "echo tick; echo $TINE_SERVICE $GREETING; sleep 1000", Dir: spec.Workspace,
			Env: []string{"GREETING=hi"}, ReadyCommand: "true"},
	}
	sts, err := c.StartServices(context.Background(), svcs, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range sts {
		if st.State != StateReady || st.Pid == 0 {
			t.Errorf("service %+v not ready", st)
		}
	}
	// The service shares no network namespace of its own here, so the host
	// reaches it on loopback.
	body := get(t, fmt.Sprintf("http://127.0.0.1:%d/index.html", port))
	if body != "hello from the run\n" {
		t.Errorf("service served %q", body)
	}
	time.Sleep(100 * time.Millisecond)
	if b, _ := os.ReadFile(filepath.Join(spec.LogDir, "tick.log")); !strings.Contains(string(b), "tick\ntick hi\n") {
		t.Errorf("tick.log = %q", b)
	}
	again, err := c.StartServices(context.Background(), svcs, false)
	if err != nil || again[1].Pid != sts[1].Pid {
		t.Errorf("starting running services again restarted them: %+v, %v", again, err)
	}
	bad := []Service{{Name: "bad", Command: "exit 3", Dir: spec.Workspace, ReadyPort: 1}}
	if _, err := c.StartServices(context.Background(), bad, false); err == nil || !strings.Contains(err.Error(), "status 3") {
		t.Errorf("failing service: %v", err)
	}
	if err := c.Stop(context.Background(), time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Status(context.Background()); err == nil {
		t.Error("status answered after stop")
	}
}

// Without waiting, services answer at once: one with a ready check is
// starting until it passes, one without is ready, and the check goes on.
func TestSupervisor_ServicesNoWait(t *testing.T) {
	spec, _, c := launch(t, false)
	flag := filepath.Join(spec.Workspace, "ready-flag")
	svcs := []Service{
		{Name: "slow", Command: "sleep 1000", Dir: spec.Workspace, ReadyCommand: "test -e " + flag, ReadyTimeout: 20 * time.Second},
		{Name: "plain", Command: "sleep 1000", Dir: spec.Workspace},
	}
	t0 := time.Now()
	sts, err := c.StartServices(context.Background(), svcs, true)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, st := range sts {
		states[st.Name] = st.State
	}
	if states["slow"] != StateStarting || states["plain"] != StateReady || time.Since(t0) > 5*time.Second {
		t.Fatalf("states without waiting: %v after %v", states, time.Since(t0))
	}
	if err := os.WriteFile(filepath.Join(spec.View, "ready-flag"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := c.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if st.Services[1].Name == "slow" && st.Services[1].State == StateReady {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("slow never became ready: %+v", st.Services)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestSupervisor_NetAndPublish(t *testing.T) {
	spec, _, c := launch(t, true)
	out, _ := run(t, c, spec, `cat /proc/net/dev | grep -c :`)
	if strings.TrimSpace(out) != "1" {
		t.Errorf("interfaces in the run's network namespace: %s, want only lo", out)
	}
	// A server inside binds a port that is also busy on the host.
	hostLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hostLn.Close()
	port := hostLn.Addr().(*net.TCPAddr).Port
	os.WriteFile(filepath.Join(spec.View, "index.html"), []byte("inside\n"), 0o644)
	_, err = c.StartServices(context.Background(), []Service{{Name: "web", Dir: spec.Workspace, ReadyPort: port,
		Command: fmt.Sprintf("exec python3 -m http.server %d --bind 127.0.0.1", port)}}, false)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f, _ := pub.(*net.TCPListener).File()
	pub.Close()
	if err := c.Publish(context.Background(), port, f.Name(), f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if body := get(t, "http://"+pub.Addr().String()+"/index.html"); body != "inside\n" {
		t.Errorf("published port served %q", body)
	}
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func get(t *testing.T, url string) string {
	t.Helper()
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// What a command starts in the background outlives it; a caller that hangs
// up mid-command sends its group SIGHUP.
func TestSupervisor_ExecBackgroundSurvives(t *testing.T) {
	spec, _, c := launch(t, false)
	run(t, c, spec, `sleep 1000 > /dev/null 2>&1 & echo $! > bg.pid`)
	time.Sleep(200 * time.Millisecond)
	b, err := os.ReadFile(filepath.Join(spec.View, "bg.pid"))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := run(t, c, spec, "kill -0 "+strings.TrimSpace(string(b))+" && echo alive")
	if strings.TrimSpace(out) != "alive" {
		t.Errorf("the background process died with its command: %q", out)
	}
}

// mountTmpfs mounts a tmpfs holding a file f at a new directory and
// returns it; the test unmounts it if it is still there at the end.
func mountTmpfs(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("on the tmpfs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A filesystem the host unmounts while a run lives is let go inside the run
// too (the host's mounts here are private, so only following the host's
// table does it), and nothing at the workspace path is touched.
func TestSupervisor_FollowsHostUnmounts(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	disk := filepath.Join(t.TempDir(), "disk")
	mountTmpfs(t, disk)
	spec, _, c := launch(t, false)
	if out, code := run(t, c, spec, "cat "+disk+"/f"); code != 0 || out != "on the tmpfs\n" {
		t.Fatalf("the run does not see the host's tmpfs: %d %q", code, out)
	}
	if err := syscall.Unmount(disk, 0); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, _ := run(t, c, spec, "grep -c ' "+disk+" ' /proc/self/mountinfo")
		if strings.TrimSpace(out) == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("5 s after the host unmounted %s the run still has it mounted", disk)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if out, code := run(t, c, spec, "cat f"); code != 0 || out != "run's file\n" {
		t.Errorf("the run's view is gone: %d %q", code, out)
	}
}

// A run whose files are the host's mount at the workspace path (a source
// run) keeps them when the host unmounts that mount: tine itself decides
// what the run sees there.
func TestSupervisor_KeepsWorkspaceMountOnHostUnmount(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	root := t.TempDir()
	spec := Spec{Run: "rtest", Hostname: "test-run", Dir: filepath.Join(root, "sup"), LogDir: filepath.Join(root, "logs"),
		Workspace: filepath.Join(root, "ws"), Env: os.Environ()}
	mountTmpfs(t, spec.Workspace)
	pid, err := Launch(context.Background(), spec, func(int) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(spec.Dir)
	t.Cleanup(func() {
		c.Stop(context.Background(), time.Second)
		syscall.Kill(pid, syscall.SIGKILL)
	})
	if err := syscall.Unmount(spec.Workspace, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // time to (wrongly) follow
	if out, code := run(t, c, spec, "cat f"); code != 0 || out != "on the tmpfs\n" {
		t.Errorf("the run lost the files at its workspace path: %d %q", code, out)
	}
}

// Once a caller hears that its exec ended, the supervisor no longer lists
// it: tine exec asks just then whether the run is idle, to stop a
// supervisor it launched.
func TestSupervisor_ExecNotListedOnceEnded(t *testing.T) {
	spec, _, c := launch(t, false)
	for i := 0; i < 200; i++ {
		if _, code := run(t, c, spec, "true"); code != 0 {
			t.Fatalf("exec: %d", code)
		}
		st, err := c.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Execs) > 0 {
			t.Fatalf("after %d execs, an ended one is still listed: %+v", i+1, st.Execs)
		}
	}
}

// StopServices stops the services named, which stay stopped (not
// restarted, whatever their policy) while the others go on, and
// StartServices starts them again.
func TestSupervisor_StopServices(t *testing.T) {
	spec, _, c := launch(t, false)
	svcs := []Service{
		{Name: "a", Command: "exec sleep 1000", Dir: spec.Workspace, Restart: "always"},
		{Name: "b", Command: "trap '' TERM; while :; do sleep 0.1; done", Dir: spec.Workspace, Restart: "always"},
		{Name: "c", Command: "exec sleep 1000", Dir: spec.Workspace},
	}
	if _, err := c.StartServices(context.Background(), svcs, false); err != nil {
		t.Fatal(err)
	}
	sts, err := c.StopServices(context.Background(), []string{"a", "b", "nosuch"}, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	state := func(sts []ServiceStatus) map[string]string {
		m := map[string]string{}
		for _, st := range sts {
			m[st.Name] = st.State
		}
		return m
	}
	if got := state(sts); got["a"] != StateStopped || got["b"] != StateStopped || got["c"] != StateReady {
		t.Fatalf("after stopping a and b: %v", got)
	}
	time.Sleep(700 * time.Millisecond) // past a restart's backoff
	st, _ := c.Status(context.Background())
	if got := state(st.Services); got["a"] != StateStopped || got["b"] != StateStopped {
		t.Fatalf("stopped services came back: %v", got)
	}
	if sts, err = c.StartServices(context.Background(), svcs, false); err != nil {
		t.Fatal(err)
	}
	if got := state(sts); got["a"] != StateReady || got["b"] != StateReady || got["c"] != StateReady {
		t.Errorf("started again: %v", got)
	}
}
