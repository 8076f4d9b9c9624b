package engine

import (
	"context"
	"fmt"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/mnt"
	"github.com/tinehq/tine/layer"
)

// Checkpoint records run ref's current files as a version without stopping
// or changing the run.
func (e *Engine) Checkpoint(ctx context.Context, ref, label string) (v *tine.Version, err error) {
	ctx = withFaultOp(ctx, "checkpoint")
	p, unlock, err := e.LockRun(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer unlock()
	ctx, made := e.startMaking(ctx, p.Workspace.ID, "checkpoint")
	defer made()
	be, err := e.backend(p.Workspace.Backend)
	if err != nil {
		return nil, err
	}
	var u undo
	defer u.run(&err)
	st := newSealTx(e, p)
	lay, v, moved, err := st.sealFast(ctx, be, tine.VersionCheckpoint, label, &u)
	if err != nil {
		return nil, err
	}
	err = e.store.Update(ctx, func(tx tine.Tx) error {
		if moved {
			p.Run.Base = v.ID
			if err := tx.UpdateRun(p.Run); err != nil {
				return err
			}
		}
		return firstError(putSealed(tx, lay, v), tx.AppendEvent(e.event(p.Workspace.ID, p.Run.ID, tine.EventCheckpoint,
			map[string]any{"version": v.ID, "label": label, "sealed_by": sealedBy(moved)})))
	})
	if err == nil {
		err = faultPointCtx(ctx) // recorded; a moved run not yet remounted
	}
	if err == nil && moved {
		st.finishMove(ctx, be, v)
	}
	return v, err
}

// RollbackResult says what a rollback did.
type RollbackResult struct {
	Run   *tine.Run     `json:"run"`
	To    *tine.Version `json:"to"`
	Saved *tine.Version `json:"saved"` // the run's files just before, kept as a version
}

// Rollback makes run ref's files exactly those of version to (an id or a
// label of the run's workspace). The files it had are first recorded as a
// version of their own, so nothing is lost.
func (e *Engine) Rollback(ctx context.Context, ref, to string) (res *RollbackResult, err error) {
	ctx = withFaultOp(ctx, "rollback")
	p, unlock, err := e.LockRun(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer unlock()
	ctx, made := e.startMaking(ctx, p.Workspace.ID, "rollback")
	defer made()
	target, err := e.findVersion(ctx, p.Workspace, to)
	if err != nil {
		return nil, err
	}
	if err := e.rt.CheckIdle(p, false); err != nil {
		return nil, err
	}
	if err := e.rt.StopBeforeReplace(ctx, p); err != nil {
		return nil, err
	}
	be, err := e.backend(p.Workspace.Backend)
	if err != nil {
		return nil, err
	}
	saved, err := e.save(ctx, be, p, "before rollback to "+target.ID)
	if err != nil {
		return nil, err
	}
	if err := faultPointCtx(ctx); err != nil { // saved and recorded, the view as it was
		return nil, err
	}
	br := e.backendRun(p.Workspace, p.Run)
	if err := e.detach(p.Workspace, p.Run, br); err != nil {
		return nil, fmt.Errorf("%s is in use, nothing rolled back (its files are saved as %s): %w", p.Run.Name, saved.ID, err)
	}
	if err := faultPointCtx(ctx); err != nil { // the view unmounted, not rolled back
		return nil, err
	}
	err = e.store.Update(ctx, func(tx tine.Tx) error {
		p.Run.Base = target.ID
		return firstError(tx.UpdateRun(p.Run), tx.AppendEvent(e.event(p.Workspace.ID, p.Run.ID, tine.EventRollback,
			map[string]any{"to": target.ID, "saved": saved.ID})))
	})
	if err != nil {
		return nil, err
	}
	e.obs.RolledBack()
	// From here the view is replaced even if the target is its own base
	// (a rollback that drops the delta), which the base marker alone could
	// not tell from a rollback that never happened.
	if err := markBase(br, replacingView); err != nil {
		return nil, fmt.Errorf("rolled back in the store, but marking the view failed (the next tine command retries): %w", err)
	}
	if err := faultPointCtx(ctx); err != nil { // recorded, the view not replaced
		return nil, err
	}
	if err := e.reactivate(ctx, be, p.Workspace, p.Run, br, target); err != nil {
		return nil, fmt.Errorf("rolled back in the store, but remounting failed (the next tine command retries): %w", err)
	}
	return &RollbackResult{Run: p.Run, To: target, Saved: saved}, nil
}

// save seals the run's current files as a saved version.
func (e *Engine) save(ctx context.Context, be layer.Backend, p Ref, label string) (v *tine.Version, err error) {
	var u undo
	defer u.run(&err)
	lay, v, err := newSealTx(e, p).seal(ctx, be, tine.VersionSaved, label, &u)
	if err != nil {
		return nil, err
	}
	err = e.store.Update(ctx, func(tx tine.Tx) error { return e.putSaved(tx, p, lay, v) })
	return v, err
}

// putSaved records v, run p's files sealed in the new layer lay (nil:
// none, see putSealed), and the event saying so.
func (e *Engine) putSaved(tx tine.Tx, p Ref, lay *tine.Layer, v *tine.Version) error {
	return firstError(putSealed(tx, lay, v),
		tx.AppendEvent(e.event(p.Workspace.ID, p.Run.ID, tine.EventSaved, map[string]any{"version": v.ID, "reason": v.Label})))
}

// detach unmounts a stacking backend's view of r (and, for the source, the
// workspace path) without deleting anything, failing if a process uses it.
func (e *Engine) detach(w *tine.Workspace, r *tine.Run, br layer.Run) error {
	if !e.backends.stacking(w.Backend) {
		return nil
	}
	if r.Role == tine.RoleSource {
		if err := mnt.UnmountAll(w.Path); err != nil {
			return err
		}
	}
	if err := mnt.UnmountAll(br.View); err != nil {
		if r.Role == tine.RoleSource {
			mnt.Bind(br.View, w.Path)
		}
		return err
	}
	return nil
}

// replacingView marks a run whose view reactivate is replacing: no
// version, so the sweeper makes the view again without saving it.
const replacingView = "replacing"

// reactivate replaces r's view with a fresh one of version v.
func (e *Engine) reactivate(ctx context.Context, be layer.Backend, w *tine.Workspace, r *tine.Run, br layer.Run, v *tine.Version) error {
	if err := e.detach(w, r, br); err != nil {
		return err
	}
	// The view is about to go, and the callers saved what it held: a crash
	// from here until the new view is marked must not leave a marker that
	// sends the sweeper to remount (and save) a view whose delta is gone.
	if err := markBase(br, replacingView); err != nil {
		return err
	}
	if err := be.Deactivate(ctx, br); err != nil {
		return err
	}
	if err := faultPointCtx(ctx); err != nil { // the old view and delta gone, the new not made
		return err
	}
	var u undo
	return e.activate(ctx, be, w, r, br, e.layerPaths(v), v.ID, &u)
}

// findVersion resolves ref, a version id or label, within workspace w.
func (e *Engine) findVersion(ctx context.Context, w *tine.Workspace, ref string) (*tine.Version, error) {
	var out *tine.Version
	err := e.store.View(ctx, func(tx tine.Tx) error {
		vs, err := tx.Versions(w.ID)
		if err != nil {
			return err
		}
		var byLabel []*tine.Version
		for _, v := range vs {
			if v.ID == ref {
				out = v
				return nil
			}
			if v.Label == ref {
				byLabel = append(byLabel, v)
			}
		}
		switch len(byLabel) {
		case 0:
			return fmt.Errorf("no version %q in workspace %s (see tine tree): %w", ref, w.Name, tine.ErrNotFound)
		case 1:
			out = byLabel[0]
			return nil
		}
		return fmt.Errorf("%d versions are labelled %q; use a version id: %w", len(byLabel), ref, tine.ErrInvalid)
	})
	return out, err
}
