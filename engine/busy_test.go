package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/engine/enginetest"
	"github.com/tinehq/tine/runtime"
)

// busyFixture is an engine with its runtime and one workspace, for the
// tests of what the engine refuses while processes use a run.
type busyFixture struct {
	ctx  context.Context
	e    *engine.Engine
	rt   *runtime.Manager
	path string
	ref  engine.Ref
}

func newBusyFixture(t *testing.T, backend string) *busyFixture {
	t.Helper()
	w := enginetest.New(t, enginetest.Options{Backend: backend, Files: map[string]string{"a.txt": "alpha\n"}})
	return &busyFixture{ctx: context.Background(), e: w.Engine, rt: runtime.Of(w.Engine), path: w.Path, ref: w.Source}
}

func (f *busyFixture) run(t *testing.T, ref string) engine.Ref {
	t.Helper()
	r, err := f.e.FindRun(f.ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (f *busyFixture) fork(t *testing.T) *tine.Run {
	t.Helper()
	res, err := f.e.Fork(f.ctx, f.ref.Run.ID, engine.ForkOptions{Copies: 1})
	if err != nil {
		t.Fatal(err)
	}
	return res.Forks[0]
}

func TestEngine_RefusesToWriteUnderRunningCommands(t *testing.T) {
	f := newBusyFixture(t, "copy")
	fork := f.fork(t)
	if err := os.WriteFile(filepath.Join(f.e.Path(f.ref.Workspace, fork), "a.txt"), []byte("fork\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.rt.AddSession(f.run(t, "source"), os.Getpid()) // a live process inside the source
	if _, err := f.e.Merge(f.ctx, fork.ID, engine.MergeOptions{}); !errors.Is(err, tine.ErrBusy) {
		t.Fatalf("Merge into a busy run: %v, want ErrBusy", err)
	}
	if _, err := f.e.Rollback(f.ctx, "source", f.ref.Run.Origin); !errors.Is(err, tine.ErrBusy) {
		t.Fatalf("Rollback of a busy run: %v, want ErrBusy", err)
	}
	if _, err := f.e.Merge(f.ctx, fork.ID, engine.MergeOptions{Force: true}); err != nil {
		t.Fatalf("forced Merge: %v", err)
	}
	f.rt.RemoveSession(f.run(t, "source"), os.Getpid())
	f.rt.AddSession(f.run(t, "source"), 1<<22+12345) // a process that is gone
	if got := f.rt.Sessions(f.run(t, "source")); len(got) != 0 {
		t.Errorf("dead session still listed: %v", got)
	}
}

func TestEngine_BusyParentSealsByCopy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the overlay backend mounts")
	}
	f := newBusyFixture(t, "overlay")
	held, err := os.Open(filepath.Join(f.path, "a.txt")) // an editor holding a file open
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	f.fork(t)
	if got := engine.LastSealedBy(t, f.e, f.ref.Run.ID); got != "copy" {
		t.Errorf("busy source sealed by %q, want copy", got)
	}
	f.rt.AddSession(f.run(t, "source"), os.Getpid())
	held.Close()
	f.fork(t)
	if got := engine.LastSealedBy(t, f.e, f.ref.Run.ID); got != "copy" {
		t.Errorf("source with a running command sealed by %q, want copy", got)
	}
}
