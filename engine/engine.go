package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/atomicfile"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/layout"
)

// Engine runs tine's operations against one state directory.
type Engine struct {
	home  string
	lay   layout.Layout // every path under home
	store tine.Store
	now   func() time.Time
	// backend returns the file backend called name, one of backends (the
	// registered ones, in the order auto tries them); tests replace it.
	backend  func(name string) (layer.Backend, error)
	backends registry
	obs      Observer      // told of each operation; see SetObserver
	ctl      ControlPlane  // the control steps of the engine's operations; see WithControl
	warnings io.Writer     // where warn writes
	warned   atomic.Int64  // how many warnings warn wrote; see LockWorkspace
	rt       Runtime       // runs the runs' processes; see WithRuntime
	trashed  chan struct{} // told when something was moved into the trash; see watchTrash
	pre      presealer     // the background seals of busy runs; see WatchPreseal
}

// Open opens the state directory home, creating it if needed, and sweeps
// what an interrupted command left behind: each workspace a command died
// in, warned in, or that was not swept since the host booted (see
// sweepDue; Sweep sweeps them all). A fresh store is created only
// when the state directory holds no workspace: a store that is missing,
// empty, damaged or not the workspaces' own is refused, wrapping
// tine.ErrStore, and nothing is swept (see CheckStore and tine doctor).
// WithStore and WithBackends are required.
func Open(ctx context.Context, home string, opts ...Option) (*Engine, error) {
	o, home, err := openingOptions(home, opts)
	if err != nil {
		return nil, err
	}
	lay := layout.New(home)
	if err := os.MkdirAll(lay.Workspaces(), 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	st, err := o.openStore(ctx, home)
	if err != nil {
		return nil, err
	}
	e := &Engine{home: home, lay: lay, now: time.Now, backends: registry{drivers: o.drivers, probes: lay.Probes()}, obs: NopObserver{}, ctl: NopControlPlane{}, warnings: o.warnings, rt: noRuntime{}, trashed: make(chan struct{}, 1)}
	if o.runtime != nil {
		e.rt = o.runtime(e)
	}
	if o.control != nil {
		e.ctl = o.control(e)
	}
	e.backend = e.backends.make
	e.store = &manifestStore{Store: st, home: home, warn: e.warn}
	if o.noSweep {
		return e, nil
	}
	if err := newSweeper(e).sweep(ctx); err != nil {
		st.Close()
		return nil, fmt.Errorf("recovering state: %w", err)
	}
	e.backfillManifests(ctx)
	return e, nil
}

// warn reports what the engine could not put right; it never stops a
// command.
func (e *Engine) warn(format string, args ...any) {
	e.warned.Add(1)
	fmt.Fprintf(e.warnings, "tine: warning: "+format+"\n", args...)
}

// say tells the user of something the engine put right.
func (e *Engine) say(format string, args ...any) {
	fmt.Fprintf(e.warnings, "tine: "+format+"\n", args...)
}

// Close releases the store.
func (e *Engine) Close() error { return e.store.Close() }

// Home returns the state directory.
func (e *Engine) Home() string { return e.home }

// Layout returns the layout of the state directory.
func (e *Engine) Layout() layout.Layout { return e.lay }

// Store returns the engine's store: read-only commands read it, and the
// control plane keeps the runs' capabilities and approvals in it.
func (e *Engine) Store() tine.Store { return e.store }

// layerPaths maps a version's layer ids to their directories.
func (e *Engine) layerPaths(v *tine.Version) []string {
	out := make([]string, len(v.Layers))
	for i, l := range v.Layers {
		out[i] = e.lay.Workspace(v.Workspace).Layer(l)
	}
	return out
}

// backendRun describes run r of workspace w to its backend. The source of a
// workspace whose backend is flat lives in the workspace directory itself;
// every other view lives under the run's directory.
func (e *Engine) backendRun(w *tine.Workspace, r *tine.Run) layer.Run {
	dir := e.lay.Run(w.ID, r.ID).Dir()
	br := layer.Run{ID: r.ID, Dir: dir, View: e.lay.Run(w.ID, r.ID).View()}
	if r.Role == tine.RoleSource && !e.backends.stacking(w.Backend) {
		br.View = w.Path
	}
	return br
}

// Path returns where the host can read run r's files: the workspace path for
// the source, the run's view under the state directory for a fork.
func (e *Engine) Path(w *tine.Workspace, r *tine.Run) string {
	if r.Role == tine.RoleSource {
		return w.Path
	}
	return e.backendRun(w, r).View
}

// event builds an event for the log, at the engine's clock.
func (e *Engine) event(ws, run string, kind tine.EventKind, detail any) *tine.Event {
	return tine.NewEvent(e.now(), ws, run, kind, detail)
}

// markBase records, in the run's directory, which version its view was
// activated from, so the sweeper can tell a view that matches the store from
// one an interrupted rollback left behind.
func markBase(r layer.Run, version string) error {
	return atomicfile.Write(filepath.Join(r.Dir, "base"), []byte(version), 0o644) // layout.Run.Base
}

func readBase(r layer.Run) string {
	b, err := os.ReadFile(filepath.Join(r.Dir, "base"))
	if err != nil {
		return ""
	}
	return string(b)
}

// undo collects compensating actions and runs them in reverse order unless
// the operation succeeded.
type undo []func() error

func (u *undo) add(f func() error) { *u = append(*u, f) }

func (u *undo) run(err *error) {
	if *err == nil {
		return
	}
	var errs []error
	for i := len(*u) - 1; i >= 0; i-- {
		if e := (*u)[i](); e != nil {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		*err = fmt.Errorf("%w (and undoing it: %w)", *err, errors.Join(errs...))
	}
}
