package runtime_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/layer/builtin"
	"github.com/tinehq/tine/sqlite"
)

// An engine opened without runtime.With runs no processes: its forks start
// stopped, and a live mode that would carry processes is refused.
func TestNoRuntime_Fork(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ws")
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
	e, err := engine.Open(ctx, t.TempDir(), engine.WithStore(sqlite.Open), engine.WithBackends(builtin.Backends()...))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ref, err := e.Init(ctx, engine.InitOptions{Path: path, Backend: "copy"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Release(ctx, path, true)
	for _, mode := range []string{engine.LivePtrace, engine.LiveRerun} {
		if _, err := e.Fork(ctx, ref.Run.ID, engine.ForkOptions{Copies: 1, Live: mode}); !errors.Is(err, tine.ErrUnsupported) {
			t.Errorf("Fork --live %s without a runtime: %v, want ErrUnsupported", mode, err)
		}
	}
	var runs []*tine.Run
	if err := e.Store().View(ctx, func(tx tine.Tx) (err error) {
		runs, err = tx.Runs(tine.RunFilter{Workspace: ref.Workspace.ID})
		return err
	}); err != nil || len(runs) != 1 {
		t.Errorf("after the refused forks the workspace has %d runs (%v), want only its source", len(runs), err)
	}
	res, err := e.Fork(ctx, ref.Run.ID, engine.ForkOptions{Copies: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Forks) != 1 || len(res.Live) != 0 || res.Forks[0].Proc == tine.ProcRunning {
		t.Errorf("Fork without a runtime: forks %+v, live %+v; want one stopped fork", res.Forks, res.Live)
	}
}
