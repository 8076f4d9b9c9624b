package sandbox

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/tinehq/tine/internal/tty"
)

func TestMain(m *testing.M) {
	if IsChild() { // the test binary re-executed by Run, as tine is
		Child()
	}
	os.Exit(m.Run())
}

func TestRun_ViewAtWorkspacePath(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("mount namespaces need Linux")
	}
	ws, view, out := t.TempDir(), t.TempDir(), filepath.Join(t.TempDir(), "out")
	os.WriteFile(filepath.Join(ws, "f"), []byte("host\n"), 0o644)
	os.MkdirAll(filepath.Join(view, "sub"), 0o755)
	os.WriteFile(filepath.Join(view, "f"), []byte("run\n"), 0o644)
	spec := Spec{View: view, Workspace: ws, Dir: filepath.Join(ws, "sub"),
		Args: []string{"sh", "-c", `cat ../f > "$OUT"; pwd -P >> "$OUT"; exit 3`},
		Env:  append(os.Environ(), "OUT="+out)}
	var started, exited int
	spec.Started = func(pid int) { started = pid }
	spec.Exited = func(pid int) { exited = pid }
	code, err := Run(spec)
	if err != nil {
		t.Fatal(err)
	}
	if code != 3 {
		t.Errorf("exit status %d, want 3", code)
	}
	b, _ := os.ReadFile(out)
	if want := "run\n" + filepath.Join(ws, "sub") + "\n"; string(b) != want {
		t.Errorf("inside the run: %q, want %q", b, want)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "f")); string(b) != "host\n" {
		t.Errorf("the host's workspace changed: %q", b)
	}
	if started == 0 || started != exited {
		t.Errorf("Started %d, Exited %d", started, exited)
	}
}

func TestRun_NotFound(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("mount namespaces need Linux")
	}
	ws := t.TempDir()
	code, err := Run(Spec{Workspace: ws, Dir: ws, Args: []string{"no-such-command-tine"}, Env: os.Environ()})
	if err != nil || code != ExitNotFound {
		t.Errorf("Run = %d, %v; want %d", code, err, ExitNotFound)
	}
}

// With a Terminal the command leads a session with it as its controlling
// terminal, in the foreground.
func TestRun_Terminal(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("mount namespaces need Linux")
	}
	master, slave, err := tty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	out := make(chan string)
	go func() { b, _ := io.ReadAll(master); out <- string(b) }()
	ws := t.TempDir()
	code, err := Run(Spec{Workspace: ws, Dir: ws, Env: os.Environ(), Terminal: slave,
		Args: []string{"sh", "-c", `set -- $(cat /proc/$$/stat); echo "pid=$1 sid=$6 tpgid=$8 tty=$7"; exit 4`}})
	slave.Close()
	got := <-out
	var pid, sid, tpgid, ttyNr int
	if _, serr := fmt.Sscanf(got, "pid=%d sid=%d tpgid=%d tty=%d", &pid, &sid, &tpgid, &ttyNr); serr != nil || err != nil || code != 4 {
		t.Fatalf("Run = %d, %v; output %q (%v)", code, err, got, serr)
	}
	if sid != pid || tpgid != pid || ttyNr == 0 {
		t.Errorf("pid %d, session %d, foreground group %d, tty %d: want a session leader in the foreground of its terminal", pid, sid, tpgid, ttyNr)
	}
}
