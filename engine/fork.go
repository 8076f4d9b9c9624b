package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/layer"
)

// MaxCopies bounds one fork call.
const MaxCopies = 64

// ForkOptions says how many forks to make and what to call them.
type ForkOptions struct {
	Copies     int      // number of forks, 1 to MaxCopies
	Name       string   // name prefix (the exact name when Copies is 1); default the parent's name
	Approaches []string // the i-th fork gets the i-th approach
	Live       string   // live-state mode: "" (rerun when the parent runs), none, rerun, ptrace, criu or auto
	// Request is the caller's key for this call, recorded with the fork so
	// that ForkLanded can tell a client that lost its answer whether the
	// fork happened; "" records none.
	Request string
	// NoWait returns once the forks' services run, without waiting for their
	// ready checks; each fork's report says which are ready and which are
	// still starting.
	NoWait bool
	// AllowSecrets lets a live fork (ptrace, criu) copy processes whose
	// environment holds secrets of the parent's [secrets].
	AllowSecrets bool
	// Hide are paths outside the workspace that no process of the forks
	// may see (a holdout test's files): covered in their mount namespaces
	// from their first process on, like the other workspaces. Fork refuses
	// them when the parent's [confine] is off.
	Hide []string
}

// ForkResult is what Fork made.
type ForkResult struct {
	Parent  *tine.Run     `json:"parent"`
	Group   *tine.Group   `json:"group"`
	Version *tine.Version `json:"version"`
	Forks   []*tine.Run   `json:"forks"`
	Live    []LiveReport  `json:"live,omitempty"` // how each fork's processes were started
	// Seal says what sealing the parent cost when it was sealed by copy
	// rather than by rename (nil then).
	Seal *SealReport `json:"seal,omitempty"`
}

// Fork records the run's current files as a version (the fork point) and
// makes Copies forks of it in one group, each with its own writable view.
// The parent's view is not touched. Either every fork is made or none is.
func (e *Engine) Fork(ctx context.Context, ref string, o ForkOptions) (res *ForkResult, err error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	start := time.Now()
	// ctx's end (a Ctrl-C) stops the seal's copy, the one long step, and
	// the fork is undone, up to its record; what follows the record, and
	// any undoing, runs whatever ctx says.
	stop := ctx
	ctx = withCopyStop(withFaultOp(context.WithoutCancel(ctx), "fork"), stop)
	p, unlock, err := e.LockRun(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer unlock()
	ctx, made := e.startMaking(ctx, p.Workspace.ID, "fork")
	defer made()
	be, err := e.backend(p.Workspace.Backend)
	if err != nil {
		return nil, err
	}
	var u undo
	defer u.run(&err)
	names, err := e.forkNames(ctx, p, o)
	if err != nil {
		return nil, err
	}
	if err := e.checkHide(ctx, p, o.Hide); err != nil {
		return nil, err
	}
	mode, err := e.rt.LiveMode(p, o.Live)
	if err != nil {
		return nil, err
	}
	if mode == LivePtrace || mode == LiveCRIU || mode == LiveAuto {
		if err := e.rt.CheckLiveFork(ctx, p, o.AllowSecrets); err != nil {
			return nil, err
		}
	}
	// The parent's capability dies before its files are cloned; it and
	// every fork get fresh ones after, whatever happens.
	if err := e.ctl.RevokeCap(ctx, p.Run); err != nil {
		return nil, err
	}
	defer func() {
		runs := []*tine.Run{p.Run}
		if res != nil {
			runs = append(runs, res.Forks...)
		}
		if cerr := e.ctl.IssueCaps(ctx, p.Workspace, runs...); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err := faultPointCtx(ctx); err != nil { // the capability revoked
		return nil, err
	}
	head := gitHead(ctx, e.Path(p.Workspace, p.Run)) // before sealing may unmount the view
	thaw, err := e.rt.Freeze(ctx, p)                 // the version is what the processes left at one instant
	if err != nil {
		return nil, err
	}
	presealed := e.sealedLast(ctx, p)
	st := newSealTx(e, p)
	lay, v, moved, err := st.sealFast(ctx, be, tine.VersionFork, "", &u)
	thaw()
	if err != nil {
		return nil, err
	}
	g := &tine.Group{ID: tine.NewID(tine.PrefixGroup), Workspace: p.Workspace.ID, Parent: p.Run.ID, Version: v.ID, CreatedAt: v.CreatedAt}
	forks, err := e.makeForks(ctx, be, p, v, g, o, names, head, &u)
	if err != nil {
		return nil, err
	}
	if err := e.writeHidden(forks, o.Hide); err != nil {
		return nil, err
	}
	if err := faultPointCtx(ctx); err != nil { // every fork's files made, nothing recorded
		return nil, err
	}
	if err := stop.Err(); err != nil {
		return nil, err
	}
	err = e.store.Update(ctx, func(tx tine.Tx) error {
		if err := firstError(putSealed(tx, lay, v), tx.PutGroup(g)); err != nil {
			return err
		}
		if moved {
			p.Run.Base = v.ID
			if err := tx.UpdateRun(p.Run); err != nil {
				return err
			}
		}
		ids := make([]string, len(forks))
		for i, f := range forks {
			ids[i] = f.ID
			if err := tx.PutRun(f); err != nil {
				return err
			}
			if err := tx.AppendEvent(e.event(f.Workspace, f.ID, tine.EventFork, map[string]any{
				"parent": p.Run.ID, "version": v.ID, "group": g.ID, "approach": f.Approach, "git_head": f.GitHead})); err != nil {
				return err
			}
		}
		detail := map[string]any{"group": g.ID, "version": v.ID, "forks": ids, "sealed_by": sealedBy(moved)}
		if o.Request != "" {
			detail["request"] = o.Request
		}
		return tx.AppendEvent(e.event(p.Workspace.ID, p.Run.ID, tine.EventForked, detail))
	})
	if err != nil {
		return nil, err
	}
	if err := faultPointCtx(ctx); err != nil { // recorded; a moved parent not yet remounted
		return nil, err
	}
	if moved {
		st.finishMove(ctx, be, v)
	}
	if presealed {
		e.pruneSealed(ctx, p)
	}
	res = &ForkResult{Parent: p.Run, Group: g, Version: v, Forks: forks, Seal: st.report()}
	res.Live = e.rt.StartForks(ctx, p, forks, mode, o.NoWait)
	e.obs.Forked(p.Workspace.Backend, mode, len(forks), time.Since(start))
	return res, nil
}

func (o *ForkOptions) check() error {
	if o.Copies < 1 || o.Copies > MaxCopies {
		return tine.Optionf("%s must be 1 to %d, not %d: %w", tine.Opt("copies"), MaxCopies, o.Copies, tine.ErrInvalid)
	}
	if len(o.Approaches) > o.Copies {
		return fmt.Errorf("%d approaches for %d copies: %w", len(o.Approaches), o.Copies, tine.ErrInvalid)
	}
	if o.Name != "" && !tine.ValidName(o.Name) {
		return fmt.Errorf("name %q: use 1-64 letters, digits, '.', '_' or '-': %w", o.Name, tine.ErrInvalid)
	}
	return nil
}

// seal records run p's current files as a new version of the given kind.
// The layer's files are made here; the caller stores the two records
// (putSealed). The layer is nil when the backend vouched that nothing
// changed since p's last seal: the version then has that seal's layers.
func (m *sealTx) seal(ctx context.Context, be layer.Backend, kind tine.VersionKind, label string, u *undo) (*tine.Layer, *tine.Version, error) {
	e, p := m.e, m.p
	base, err := e.version(ctx, p.Run.Base)
	if err != nil {
		return nil, nil, err
	}
	now := e.now().UTC()
	lay := &tine.Layer{ID: tine.NewID(tine.PrefixLayer), Workspace: p.Workspace.ID, CreatedAt: now}
	dir := e.lay.Workspace(p.Workspace.ID).Layer(lay.ID)
	if err := noteLayer(ctx, lay.ID); err != nil {
		return nil, nil, err
	}
	paths, err := m.sealCopy(ctx, be, base, dir)
	u.add(func() error { return be.RemoveLayer(ctx, dir) })
	if err != nil {
		return nil, nil, fmt.Errorf("sealing %s: %w", p.Run.Name, err)
	}
	if err := faultPointCtx(ctx); err != nil { // the layer copied, not recorded
		return nil, nil, err
	}
	if m.cost != nil && m.cost.Unchanged {
		lay = nil // nothing changed since the seal before: its layers are the version's
	} else {
		lay.Bytes, _ = fstree.DiskUsage(dir)
	}
	v := &tine.Version{ID: tine.NewID(tine.PrefixVersion), Workspace: p.Workspace.ID, Parent: base.ID,
		Run: p.Run.ID, Kind: kind, Label: label, CreatedAt: now}
	for _, path := range paths {
		v.Layers = append(v.Layers, filepath.Base(path))
	}
	undoNote := m.noteSealed(v)
	u.add(undoNote)
	return lay, v, nil
}

// putSealed records a seal's version v and its new layer lay, when it
// made one (see seal).
func putSealed(tx tine.Tx, lay *tine.Layer, v *tine.Version) error {
	if lay != nil {
		if err := tx.PutLayer(lay); err != nil {
			return err
		}
	}
	return tx.PutVersion(v)
}

// sealFast seals p by renaming its delta when it can, by copying otherwise.
func (m *sealTx) sealFast(ctx context.Context, be layer.Backend, kind tine.VersionKind, label string, u *undo) (*tine.Layer, *tine.Version, bool, error) {
	e, p := m.e, m.p
	lay, v, moved, err := m.sealMove(ctx, be, kind, label, u)
	if err != nil || moved {
		return lay, v, moved, err
	}
	base, err := e.version(ctx, p.Run.Base)
	if err != nil {
		return nil, nil, false, err
	}
	lay, v, err = m.seal(ctx, be, kind, label, u)
	if err != nil {
		return nil, nil, false, err
	}
	return lay, v, m.rebaseCompacted(ctx, be, base, v, u), nil
}

func sealedBy(moved bool) string {
	if moved {
		return "rename"
	}
	return "copy"
}

// makeForks makes the forks' views of version v.
func (e *Engine) makeForks(ctx context.Context, be layer.Backend, p Ref, v *tine.Version, g *tine.Group, o ForkOptions, names []string, head string, u *undo) ([]*tine.Run, error) {
	forks := make([]*tine.Run, o.Copies)
	for i := range forks {
		f := &tine.Run{ID: tine.NewID(tine.PrefixRun), Workspace: p.Workspace.ID, Name: names[i], Parent: p.Run.ID,
			Role: tine.RoleFork, State: tine.StateActive, Base: v.ID, Origin: v.ID, Group: g.ID,
			GitHead: head, CreatedAt: v.CreatedAt, UpdatedAt: v.CreatedAt}
		if i < len(o.Approaches) {
			f.Approach = o.Approaches[i]
		}
		if err := e.activate(ctx, be, p.Workspace, f, e.backendRun(p.Workspace, f), e.layerPaths(v), v.ID, u); err != nil {
			return nil, fmt.Errorf("making fork %s: %w", f.Name, err)
		}
		forks[i] = f
		if err := faultPointCtx(ctx); err != nil { // this fork's view made
			return nil, err
		}
	}
	return forks, nil
}

// forkNames picks unused names: the exact name for a single named fork,
// PREFIX-1, PREFIX-2, ... otherwise.
func (e *Engine) forkNames(ctx context.Context, p Ref, o ForkOptions) ([]string, error) {
	taken := map[string]bool{}
	err := e.store.View(ctx, func(tx tine.Tx) error {
		runs, err := tx.Runs(tine.RunFilter{Workspace: p.Workspace.ID})
		for _, r := range runs {
			taken[r.Name] = true
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if o.Copies == 1 && o.Name != "" {
		if taken[o.Name] {
			return nil, fmt.Errorf("a run is already called %s in workspace %s: %w", o.Name, p.Workspace.Name, tine.ErrExists)
		}
		return []string{o.Name}, nil
	}
	prefix := o.Name
	if prefix == "" {
		prefix = p.Run.Name
	}
	var names []string
	for i := 1; len(names) < o.Copies; i++ {
		n := fmt.Sprintf("%s-%d", prefix, i)
		if len(n) > 64 {
			return nil, fmt.Errorf("name prefix %q is too long: %w", prefix, tine.ErrInvalid)
		}
		if !taken[n] {
			names = append(names, n)
		}
	}
	return names, nil
}

// LockRun resolves ref to an active run and locks its workspace, reading
// the run again under the lock.
func (e *Engine) LockRun(ctx context.Context, ref string) (Ref, func(), error) {
	r, err := e.FindRun(ctx, ref)
	if err != nil {
		return Ref{}, nil, err
	}
	yielded := e.pre.yield(r.Workspace.ID) // a background seal gives way to the person
	unlock, err := e.LockWorkspace(r.Workspace.ID)
	yielded()
	if err != nil {
		return Ref{}, nil, err
	}
	err = e.store.View(ctx, func(tx tine.Tx) error {
		r.Run, err = tx.Run(r.Run.ID)
		return err
	})
	if err == nil && !r.Run.Active() {
		err = fmt.Errorf("run %s is %s: %w", r.Run.Name, r.Run.State, tine.ErrState)
	}
	if err != nil {
		unlock()
		return Ref{}, nil, err
	}
	return r, unlock, nil
}

func (e *Engine) version(ctx context.Context, id string) (*tine.Version, error) {
	var v *tine.Version
	err := e.store.View(ctx, func(tx tine.Tx) error {
		var err error
		v, err = tx.Version(id)
		return err
	})
	return v, err
}
