package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/flock"
	"github.com/tinehq/tine/internal/procfs"
	"github.com/tinehq/tine/internal/tick"
	"github.com/tinehq/tine/layer"
)

// A busy run (a shell, an editor or a dev server holds its view) cannot be
// sealed by rename, so each fork copies what changed since its last seal.
// The daemon keeps that small: once a busy run's writes settle it seals
// the run by copy in the background (a version of kind sealed), and the
// next fork stacks on that seal and copies only what changed since.

// When a background seal is due.
var (
	// presealQuiet is how long a run's delta must go unchanged (by its
	// change tracker's account) before it is sealed.
	presealQuiet = 2 * time.Second
	// presealGap is the least time between two background seals of a
	// run.
	presealGap = 3 * time.Second
	// presealLook is how often a run the change tracker does not follow
	// yet (never sealed by copy) is looked at for holders: a search of
	// /proc, not done every tick.
	presealLook = 5 * time.Second
	// A run the tracker does not follow yet is sealed in the background
	// only when its delta holds at least presealMinBytes of data or
	// presealMinFiles entries: a smaller one costs its fork milliseconds.
	presealMinBytes int64 = 256 << 10
	presealMinFiles       = 100
	// presealRestart is the chain of incremental seals (layer.ChainMax at
	// most) from which a background seal starts a new chain, copying the
	// whole delta, so that the forks in between (a layer each) never
	// reach the end of the chain and copy the whole delta themselves.
	presealRestart = layer.ChainMax - 4
)

// Presealed says what a background seal of a busy run did.
type Presealed struct {
	Workspace *tine.Workspace
	Run       *tine.Run
	Version   *tine.Version
	Seal      *SealReport
}

// presealer is the engine's record of its background seals.
type presealer struct {
	mu      sync.Mutex
	last    map[string]time.Time          // run id → its last background seal or look
	cancel  map[string]context.CancelFunc // workspace id → the background seal under way in it
	waiting map[string]int                // workspace id → commands waiting for its lock
}

// yield stops the background seal under way in workspace ws, if any, and
// keeps another from starting there until the returned func is called
// (once the caller holds the workspace's lock), so that a person's
// command does not wait for one: the seal is undone, and the command's
// own seal copies what it would have.
func (p *presealer) yield(ws string) (done func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waiting == nil {
		p.waiting = map[string]int{}
	}
	p.waiting[ws]++
	if c := p.cancel[ws]; c != nil {
		c()
	}
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.waiting[ws]--; p.waiting[ws] <= 0 {
			delete(p.waiting, ws)
		}
	}
}

// due reports whether run id was not sealed or looked at in the
// background for gap, and if so counts now as its last.
func (p *presealer) due(id string, now time.Time, gap time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		p.last = map[string]time.Time{}
	}
	if now.Sub(p.last[id]) < gap {
		return false
	}
	p.last[id] = now
	return true
}

// begin records the background seal under way in workspace ws; false
// when a command waits for the workspace (it goes first).
func (p *presealer) begin(ws string, cancel context.CancelFunc) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waiting[ws] > 0 {
		return false
	}
	if p.cancel == nil {
		p.cancel = map[string]context.CancelFunc{}
	}
	p.cancel[ws] = cancel
	return true
}

// finish ends the stopping of the background seal under way in workspace
// ws by a command (yield): it reports false when one already stopped it
// (ctx ended) or waits for the workspace, and otherwise forgets its
// cancel, so that a command coming now waits for it to be recorded.
func (p *presealer) finish(ctx context.Context, ws string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ctx.Err() != nil || p.waiting[ws] > 0 {
		return false
	}
	delete(p.cancel, ws)
	return true
}

// end forgets it.
func (p *presealer) end(ws string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.cancel, ws)
}

// WatchPreseal seals, every period until ctx ends, the busy runs whose
// writes have settled (see Preseal), one at a time, each at the idle I/O
// priority so the run's own work goes first, telling said of each. Only
// the daemon calls it: the change tracker that says when a run's writes
// settled lives in its process.
func (e *Engine) WatchPreseal(ctx context.Context, every time.Duration, said func(*Presealed)) {
	tick.Every(ctx, every, func() {
		for _, r := range e.presealCandidates(ctx) {
			res, err := e.presealIdle(ctx, r)
			switch {
			case ctx.Err() != nil:
				return
			case errors.Is(err, context.Canceled):
				e.say("the background seal of %s gave way to a command on its workspace (undone)", r.Run.Name)
			case err != nil:
				e.warn("sealing %s in the background: %v", r.Run.Name, err)
			case res != nil && said != nil:
				said(res)
			}
		}
	})
}

// presealIdle runs Preseal on a thread of its own at the idle I/O
// priority; the thread ends with it.
func (e *Engine) presealIdle(ctx context.Context, r Ref) (*Presealed, error) {
	type result struct {
		res *Presealed
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		lowerIOPriority()
		res, err := e.Preseal(ctx, r)
		ch <- result{res, err}
	}()
	out := <-ch
	return out.res, out.err
}

// presealCandidates returns the active runs whose backend follows their
// changes (layer.Settling) and whose writes may have settled.
func (e *Engine) presealCandidates(ctx context.Context) []Ref {
	var out []Ref
	_ = e.store.View(ctx, func(tx tine.Tx) error {
		runs, err := tx.Runs(tine.RunFilter{State: tine.StateActive})
		if err != nil {
			return err
		}
		ws := map[string]*tine.Workspace{}
		for _, r := range runs {
			w, ok := ws[r.Workspace]
			if !ok {
				if w, err = tx.Workspace(r.Workspace); err != nil {
					continue
				}
				ws[r.Workspace] = w
			}
			if e.presealWanted(Ref{Workspace: w, Run: r}) {
				out = append(out, Ref{Workspace: w, Run: r})
			}
		}
		return nil
	})
	return out
}

// presealWanted reports whether run r is due a background seal: its
// backend seals incrementally and follows its changes; the tracker saw
// its delta change, not in the last presealQuiet (or, unchanged, its
// chain of seals reached presealRestart), and it was not sealed in
// the background in the last presealGap (a run the tracker does not
// follow yet is looked at every presealLook, and sealed whole when it
// has a delta worth it); and something holds its view (an idle run's next fork
// seals it by rename, in O(1)). Counting marks the run as looked at.
func (e *Engine) presealWanted(r Ref) bool {
	be, err := e.backend(r.Workspace.Backend)
	if err != nil {
		return false
	}
	st, ok := be.(layer.Settling)
	if _, inc := be.(layer.Incremental); !ok || !inc {
		return false
	}
	br := e.backendRun(r.Workspace, r.Run)
	now := e.now()
	changed, last, known := st.Changed(br)
	switch {
	case known && changed:
		return now.Sub(last) >= presealQuiet && e.pre.due(r.Run.ID, now, presealGap) && e.held(r)
	case known: // unchanged: due only to start a new chain before forks must (the store read once a gap)
		return e.pre.due(r.Run.ID, now, presealGap) &&
			newSealTx(e, r).chainLen(context.Background()) >= presealRestart && e.held(r)
	}
	return e.pre.due(r.Run.ID, now, presealLook) &&
		deltaAtLeast(filepath.Join(br.Dir, "upper"), presealMinBytes, presealMinFiles) && e.held(r)
}

// held reports whether something holds run r's view: its own commands or
// services, or another process with its cwd or a file in it.
func (e *Engine) held(r Ref) bool {
	if e.rt.Busy(r) {
		return true
	}
	dirs := []string{e.backendRun(r.Workspace, r.Run).View}
	if r.Run.Role == tine.RoleSource {
		dirs = append(dirs, r.Workspace.Path)
	}
	return len(procfs.Holders("", dirs, 1)) > 0
}

// Preseal seals busy run r by copy, as a version of kind sealed, so that
// its next fork copies only what changed since. It does nothing (nil, nil)
// when r's workspace is locked (a person's command goes first), r is no
// longer active, or its backend does not seal incrementally (see
// layer.Incremental). It does not ask whether r is due (presealWanted). A person's command
// on the workspace stops it (see presealer.yield): it is then undone and
// returns context.Canceled.
func (e *Engine) Preseal(ctx context.Context, r Ref) (res *Presealed, err error) {
	ctx = withFaultOp(ctx, "preseal")
	unlock, ok := e.tryLockWorkspace(r.Workspace.ID)
	if !ok {
		return nil, nil
	}
	defer unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if !e.pre.begin(r.Workspace.ID, cancel) {
		return nil, nil
	}
	defer e.pre.end(r.Workspace.ID)
	if err := e.store.View(ctx, func(tx tine.Tx) error {
		var err error
		r.Run, err = tx.Run(r.Run.ID)
		return err
	}); err != nil {
		if errors.Is(err, tine.ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	if !r.Run.Active() {
		return nil, nil
	}
	be, err := e.backend(r.Workspace.Backend)
	if err != nil {
		return nil, err
	}
	if _, ok := be.(layer.Incremental); !ok {
		return nil, nil // its forks copy the whole delta whatever was sealed before
	}
	ctx, made := e.startMaking(ctx, r.Workspace.ID, "seal")
	defer made()
	var u undo
	defer u.run(&err)
	st := newSealTx(e, r)
	st.busy = true // only a held run is sealed in the background
	st.restart = st.chainLen(ctx) >= presealRestart
	lay, v, err := st.seal(ctx, be, tine.VersionSealed, "", &u)
	if err != nil {
		return nil, err
	}
	if !e.pre.finish(ctx, r.Workspace.ID) { // given way: undone
		return nil, context.Canceled
	}
	// Copied: from here a command waits the few milliseconds the record
	// and the pruning take, rather than have them cut halfway.
	ctx = context.WithoutCancel(ctx)
	if err := e.store.Update(ctx, func(tx tine.Tx) error {
		return putSealed(tx, lay, v)
	}); err != nil {
		return nil, fmt.Errorf("recording the seal of %s: %w", r.Run.Name, err)
	}
	if err := faultPointCtx(ctx); err != nil { // recorded, the seals before not pruned
		return nil, err
	}
	e.pruneSealed(ctx, r)
	st.cost.Busy = true
	return &Presealed{Workspace: r.Workspace, Run: r.Run, Version: v, Seal: st.cost}, nil
}

// tryLockWorkspace is LockWorkspace when the lock is free, and nothing
// (ok false) when a command holds it.
func (e *Engine) tryLockWorkspace(ws string) (func(), bool) {
	release, ok := flock.Try(e.lay.Workspace(ws).Lock())
	if !ok {
		return nil, false
	}
	return e.markUnfinished(ws, release), true
}
