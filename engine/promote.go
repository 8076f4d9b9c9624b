package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/layer"
)

// PromoteResult says what a promotion did.
type PromoteResult struct {
	Run     *tine.Run     `json:"run"`     // the new source
	Retired *tine.Run     `json:"retired"` // the old source
	Saved   *tine.Version `json:"saved"`   // the old source's files, kept as a version
}

// Promote makes fork ref the source of its workspace: it takes the source's
// name and role and its files appear at the workspace path; the old source
// retires, its files kept as a version. It is refused when the source
// changed since the fork's line left it, naming those paths, unless
// dropSourceChanges is set or the fork already has the same content there.
func (e *Engine) Promote(ctx context.Context, ref string, dropSourceChanges bool) (res *PromoteResult, err error) {
	ctx = withFaultOp(ctx, "promote")
	p, unlock, err := e.LockRun(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer unlock()
	ctx, made := e.startMaking(ctx, p.Workspace.ID, "promote")
	defer made()
	if p.Run.Role != tine.RoleFork {
		return nil, fmt.Errorf("%s is the %s, not a fork: %w", p.Run.Name, p.Run.Role, tine.ErrState)
	}
	src, since, err := e.SourceAndForkPoint(ctx, p)
	if err != nil {
		return nil, err
	}
	if !dropSourceChanges {
		if err := e.checkSourceUnchanged(ctx, src, p, since); err != nil {
			return nil, err
		}
	}
	for _, r := range []Ref{src, p} {
		if err := e.rt.CheckIdle(r, false); err != nil {
			return nil, err
		}
		if err := e.rt.StopBeforeReplace(ctx, r); err != nil {
			return nil, err
		}
	}
	be, err := e.backend(p.Workspace.Backend)
	if err != nil {
		return nil, err
	}
	return e.promote(ctx, be, p, src)
}

// SourceAndForkPoint finds the source of fork p's workspace and the
// version at which p's line of ancestry left it; it wraps tine.ErrState
// when p does not descend from the current source.
func (e *Engine) SourceAndForkPoint(ctx context.Context, p Ref) (Ref, *tine.Version, error) {
	var src Ref
	var since string
	err := e.store.View(ctx, func(tx tine.Tx) error {
		r := p.Run
		for r.Parent != "" {
			parent, err := tx.Run(r.Parent)
			if err != nil {
				return err
			}
			if parent.Role == tine.RoleSource {
				src, since = Ref{p.Workspace, parent}, r.Origin
				return nil
			}
			r = parent
		}
		return fmt.Errorf("%s does not descend from the current source (it was retired?): %w", p.Run.Name, tine.ErrState)
	})
	if err != nil {
		return Ref{}, nil, err
	}
	v, err := e.version(ctx, since)
	return src, v, err
}

// checkSourceUnchanged refuses when the source has changes since version
// since that the fork does not share.
func (e *Engine) checkSourceUnchanged(ctx context.Context, src, fork Ref, since *tine.Version) error {
	be, err := e.backend(src.Workspace.Backend)
	if err != nil {
		return err
	}
	changes, err := be.Changes(ctx, e.backendRun(src.Workspace, src.Run), e.layerPaths(since))
	if err != nil {
		return err
	}
	// Both views are written by others (the source's user, the fork): read
	// them beneath their roots.
	srcView, err := fstree.OpenRoot(e.Path(src.Workspace, src.Run))
	if err != nil {
		return err
	}
	defer srcView.Close()
	forkView, err := fstree.OpenRoot(e.Path(fork.Workspace, fork.Run))
	if err != nil {
		return err
	}
	defer forkView.Close()
	var lost []string
	for _, c := range changes {
		if !samePathIn(srcView, forkView, c.Path) {
			lost = append(lost, c.Path)
		}
	}
	if len(lost) == 0 {
		return nil
	}
	show := lost
	if len(show) > 10 {
		show = append(show[:10:10], fmt.Sprintf("and %d more", len(lost)-10))
	}
	return tine.Optionf("the source changed since %s was forked (%s); merge those into it first, or use %s (they are kept as a version): %w",
		fork.Run.Name, strings.Join(show, ", "), tine.Opt("drop_source_changes"), tine.ErrUnmerged)
}

// promote seals the old source's files as a version (and, for a flat
// backend, the fork's, to be activated in the workspace directory) and
// switches the roles, recording both in one store transaction, then moves
// the files. Nothing is recorded until every copy is whole: a failure
// before (a full disk) removes the copies, and the workspace is exactly as
// it was, so a retry once space is freed starts afresh.
func (e *Engine) promote(ctx context.Context, be layer.Backend, p, src Ref) (res *PromoteResult, err error) {
	recorded := false
	defer func() {
		if !recorded {
			err = e.diskFull(err, "promoting "+p.Run.Name, p.Workspace.Path, "nothing changed")
		}
	}()
	var u undo
	defer u.run(&err)
	savedLay, saved, err := newSealTx(e, src).seal(ctx, be, tine.VersionSaved, "retired by promoting "+p.Run.Name, &u)
	if err != nil {
		return nil, err
	}
	if err := faultPointCtx(ctx); err != nil { // the source sealed, nothing recorded
		return nil, err
	}
	oldBr, newBr := e.backendRun(src.Workspace, src.Run), e.backendRun(p.Workspace, p.Run)
	var freshLay *tine.Layer
	var fresh *tine.Version
	if !e.backends.stacking(p.Workspace.Backend) {
		// A flat source lives in the workspace directory: the fork's files
		// will be activated there from a version of them.
		if freshLay, fresh, err = newSealTx(e, p).seal(ctx, be, tine.VersionSaved, "promoted", &u); err != nil {
			return nil, err
		}
		if err := faultPointCtx(ctx); err != nil { // the fork sealed too
			return nil, err
		}
	}
	if err := e.switchRoles(ctx, p, src, savedLay, saved, freshLay, fresh); err != nil {
		return nil, err
	}
	u, recorded = nil, true // the versions are the store's now
	e.obs.Promoted()
	if fresh != nil {
		// The new source's files will be made again from fresh: a crash
		// from here on must not send the sweeper to save what the workspace
		// directory holds (the old source's files, saved already) as if it
		// were the new source's view of its old base.
		if err := markBase(newBr, replacingView); err != nil {
			return nil, fmt.Errorf("promoted in the store, but marking the files failed (the next tine command retries): %w", err)
		}
	}
	if err := faultPointCtx(ctx); err != nil { // recorded, no file moved
		return nil, err
	}
	if err := e.switchFiles(ctx, be, p, fresh, oldBr, newBr); err != nil {
		return nil, fmt.Errorf("promoted in the store, but moving the files failed (the next tine command retries): %w", err)
	}
	if err := e.ctl.Promoted(ctx, p); err != nil {
		e.warn("%s is the source now, but the effects it asked for as a fork were not offered: %v", p.Run.Name, err)
	}
	return &PromoteResult{Run: p.Run, Retired: src.Run, Saved: saved}, nil
}

// switchRoles records, in one transaction, the old source's files as the
// version saved (its layer savedLay), the fork's as fresh (freshLay; nil
// for a stacking backend), the old source retired and the fork the source.
func (e *Engine) switchRoles(ctx context.Context, p, src Ref, savedLay *tine.Layer, saved *tine.Version, freshLay *tine.Layer, fresh *tine.Version) error {
	name := src.Run.Name
	return e.store.Update(ctx, func(tx tine.Tx) error {
		if err := e.putSaved(tx, src, savedLay, saved); err != nil {
			return err
		}
		if fresh != nil {
			if err := e.putSaved(tx, p, freshLay, fresh); err != nil {
				return err
			}
			p.Run.Base = fresh.ID
		}
		src.Run.Role, src.Run.State, src.Run.Name = tine.RoleRetired, tine.StateDiscarded, retiredName(tx, src)
		if err := tx.UpdateRun(src.Run); err != nil {
			return err
		}
		p.Run.Role, p.Run.Name, p.Run.Resolution = tine.RoleSource, name, tine.ResolutionPromoted
		return firstError(tx.UpdateRun(p.Run),
			tx.AppendEvent(e.event(p.Workspace.ID, p.Run.ID, tine.EventPromote, map[string]any{"retired": src.Run.ID, "saved": saved.ID})),
			tx.AppendEvent(e.event(src.Workspace.ID, src.Run.ID, tine.EventRetire, map[string]any{"promoted": p.Run.ID, "saved": saved.ID})))
	})
}

// switchFiles puts the new source's files at the workspace path and removes
// the old source's view.
func (e *Engine) switchFiles(ctx context.Context, be layer.Backend, p Ref, fresh *tine.Version, oldBr, forkBr layer.Run) error {
	if e.backends.stacking(p.Workspace.Backend) {
		if err := bindSource(p.Workspace, forkBr); err != nil {
			return err
		}
		if err := faultPointCtx(ctx); err != nil { // the workspace path shows the new source
			return err
		}
		if err := be.Deactivate(ctx, oldBr); err != nil {
			return err
		}
		if err := faultPointCtx(ctx); err != nil { // the old source's view gone
			return err
		}
		return os.RemoveAll(oldBr.Dir)
	}
	// The fork's view goes first: fresh holds its files, and the sweeper
	// makes a flat source's files again but knows nothing of this copy.
	if err := removeTree(forkBr.View); err != nil {
		return err
	}
	if err := faultPointCtx(ctx); err != nil { // the fork's view gone
		return err
	}
	if err := be.Deactivate(ctx, oldBr); err != nil {
		return err
	}
	if err := faultPointCtx(ctx); err != nil { // the workspace directory emptied
		return err
	}
	if err := os.RemoveAll(oldBr.Dir); err != nil {
		return err
	}
	var u undo
	srcBr := e.backendRun(p.Workspace, p.Run) // now the workspace directory
	return e.activate(ctx, be, p.Workspace, p.Run, srcBr, e.layerPaths(fresh), fresh.ID, &u)
}

// retiredName picks the old source's new name.
func retiredName(tx tine.Tx, src Ref) string {
	for i := 1; ; i++ {
		n := fmt.Sprintf("%s-retired-%d", src.Run.Name, i)
		if _, err := tx.RunByName(src.Workspace.ID, n); err != nil {
			return n
		}
	}
}

// samePathIn reports whether rel has the same signature beneath both
// roots (both missing counts as the same). A symlink on the way to rel on
// either side makes it differ: nothing is compared through one.
func samePathIn(a, b *fstree.Root, rel string) bool {
	pa, releaseA, ea := a.Pin(rel)
	if ea == nil {
		defer releaseA()
		_, ea = fstree.Lstat(pa)
	}
	pb, releaseB, eb := b.Pin(rel)
	if eb == nil {
		defer releaseB()
		_, eb = fstree.Lstat(pb)
	}
	if ea != nil || eb != nil {
		return errors.Is(ea, fs.ErrNotExist) && errors.Is(eb, fs.ErrNotExist)
	}
	same, err := fstree.SamePath(pa, pb)
	return err == nil && same
}
