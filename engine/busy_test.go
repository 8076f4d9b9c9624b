package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/engine/enginetest"
	"github.com/tinehq/tine/internal/mnt"
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
	f := &busyFixture{ctx: context.Background(), path: filepath.Join(t.TempDir(), "ws")}
	if err := os.MkdirAll(f.path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.path, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := engine.Open(f.ctx, t.TempDir(), enginetest.EngineOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	f.e, f.rt = e, runtime.Of(e)
	if f.ref, err = e.Init(f.ctx, engine.InitOptions{Path: f.path, Backend: backend}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.Release(f.ctx, f.path, true)
		e.Close()
		mnt.UnmountAll(f.path)
	})
	return f
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

func (f *busyFixture) lastSealedBy(t *testing.T) string {
	t.Helper()
	evs, err := f.e.Events(f.ctx, tine.EventFilter{Run: f.ref.Run.ID})
	if err != nil {
		t.Fatal(err)
	}
	for i := len(evs) - 1; i >= 0; i-- {
		var d struct {
			SealedBy string `json:"sealed_by"`
		}
		json.Unmarshal(evs[i].Detail, &d)
		if d.SealedBy != "" {
			return d.SealedBy
		}
	}
	return ""
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
	if got := f.lastSealedBy(t); got != "copy" {
		t.Errorf("busy source sealed by %q, want copy", got)
	}
	f.rt.AddSession(f.run(t, "source"), os.Getpid())
	held.Close()
	f.fork(t)
	if got := f.lastSealedBy(t); got != "copy" {
		t.Errorf("source with a running command sealed by %q, want copy", got)
	}
}
