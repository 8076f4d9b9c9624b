package runtime_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/cgroup"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/engine/enginetest"
	"github.com/tinehq/tine/internal/procfs"
	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/runtime"
)

// rootWhy says why these tests need root.
const rootWhy = "a run's processes run under a supervisor in namespaces and a cgroup"

// fixture is a workspace on the overlay backend, opened as tine opens it,
// with its runtime.
type fixture struct {
	ctx context.Context
	w   *enginetest.Workspace
	rt  *runtime.Manager
}

// newFixture makes a workspace holding files (tine.toml among them), on a
// fresh state directory under home ("" for a fresh one).
func newFixture(t *testing.T, home string, files map[string]string) *fixture {
	t.Helper()
	testkit.RequireRoot(t, rootWhy)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("requires /usr/bin/python3 for the test services")
	}
	w := enginetest.New(t, enginetest.Options{Backend: "overlay", Files: files, Home: home})
	return &fixture{ctx: context.Background(), w: w, rt: runtime.Of(w.Engine)}
}

// run finds ref afresh (its recorded process state included).
func (f *fixture) run(t *testing.T, ref string) engine.Ref {
	t.Helper()
	r, err := f.w.Engine.FindRun(f.ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// start starts ref with its services and returns its supervisor's pid.
func (f *fixture) start(t *testing.T, ref string) int {
	t.Helper()
	res, err := f.rt.Start(f.ctx, ref, runtime.StartOptions{Services: true})
	if err != nil {
		t.Fatalf("Start %s: %v", ref, err)
	}
	return res.Pid
}

// kinds lists the kinds of run r's events, oldest first.
func (f *fixture) kinds(t *testing.T, r engine.Ref) []tine.EventKind {
	t.Helper()
	evs, err := f.w.Engine.Events(f.ctx, tine.EventFilter{Run: r.Run.ID})
	if err != nil {
		t.Fatal(err)
	}
	var out []tine.EventKind
	for _, ev := range evs {
		out = append(out, ev.Kind)
	}
	return out
}

// killSupervisor kills r's supervisor with SIGKILL and waits until the
// runtime sees it dead.
func (f *fixture) killSupervisor(t *testing.T, ref string) int {
	t.Helper()
	pid := f.rt.SupervisorPid(f.run(t, ref))
	if pid == 0 {
		t.Fatalf("%s has no supervisor to kill", ref)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ref+"'s supervisor seen dead", func() bool {
		st, _ := f.rt.ProcState(f.run(t, ref))
		return st == runtime.ProcDead
	})
	return pid
}

// cgroupExists reports whether run id's cgroup is in any hierarchy.
func cgroupExists(t *testing.T, id string) bool {
	t.Helper()
	_, err := cgroup.Load(id)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// running reports whether pid is a process that has not ended (a zombie
// has).
func running(pid int) bool {
	st, err := procfs.Read("", pid)
	return err == nil && !st.Exited()
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
