package sandbox

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
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
