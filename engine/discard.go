package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/mnt"
	"golang.org/x/sys/unix"
)

// Discard ends run ref, or every live run of group ref: it marks each
// discarded first, then unmounts its view and moves its directory (its
// delta) into the trash, which EmptyTrash deletes later. Lineage, versions
// and events remain. A run with changes that were never merged or
// promoted is refused unless force is set; then nothing is discarded.
// ctx's end (a Ctrl-C) stops it before the mark, with nothing discarded
// and ctx's error; after it, the discard finishes.
func (e *Engine) Discard(ctx context.Context, ref string, force bool) ([]*tine.Run, error) {
	ctx = withFaultOp(ctx, "discard")
	w, runs, err := e.findDiscardable(ctx, ref)
	if err != nil {
		return nil, err
	}
	unlock, err := e.LockWorkspace(w.ID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	runs, err = e.refresh(ctx, runs)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		if e.rt.Supervised(Ref{w, r}) {
			continue // discarding a run stops its processes
		}
		if err := e.rt.CheckIdle(Ref{w, r}, force); err != nil {
			return nil, err
		}
	}
	dt := newDiscardTx(e, w)
	if !force {
		if err := dt.checkMerged(ctx, runs); err != nil {
			return nil, err
		}
	}
	if err := faultPointCtx(ctx); err != nil { // checked, nothing recorded
		return nil, err
	}
	if err := ctx.Err(); err != nil { // the last point a Ctrl-C stops it
		return nil, err
	}
	// Committed from here: ctx's end (a Ctrl-C) no longer stops anything,
	// the runs' files are removed whatever it says.
	ctx = context.WithoutCancel(ctx)
	err = e.store.Update(ctx, func(tx tine.Tx) error {
		for _, r := range runs {
			r.State = tine.StateDiscarded
			if err := firstError(tx.UpdateRun(r), tx.AppendEvent(e.event(w.ID, r.ID, tine.EventDiscard, map[string]any{"force": force}))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	e.obs.Discarded(len(runs))
	if err := faultPointCtx(ctx); err != nil { // recorded, no file removed
		return nil, err
	}
	for _, r := range runs {
		if err := e.rt.StopRun(ctx, Ref{w, r}, tine.EventStop); err != nil {
			e.warn("stopping %s: %v", r.Name, err)
		}
	}
	return runs, dt.removeFiles(ctx, runs)
}

// findDiscardable resolves ref to live forks: a run, or a group's live runs.
func (e *Engine) findDiscardable(ctx context.Context, ref string) (*tine.Workspace, []*tine.Run, error) {
	var w *tine.Workspace
	var runs []*tine.Run
	err := e.store.View(ctx, func(tx tine.Tx) error {
		if tine.LooksLikeID(tine.PrefixGroup, ref) {
			if g, err := tx.Group(ref); err == nil {
				if w, err = tx.Workspace(g.Workspace); err != nil {
					return err
				}
				runs, err = tx.Runs(tine.RunFilter{Group: g.ID, State: tine.StateActive})
				if err == nil && len(runs) == 0 {
					err = fmt.Errorf("group %s has no live runs: %w", ref, tine.ErrState)
				}
				return err
			}
		}
		r, err := findRun(tx, ref)
		w, runs = r.Workspace, []*tine.Run{r.Run}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	for _, r := range runs {
		if r.Role == tine.RoleSource {
			return nil, nil, fmt.Errorf("%s is the source of workspace %s; use tine release to stop managing it: %w", r.Name, w.Name, tine.ErrState)
		}
	}
	return w, runs, nil
}

// refresh reads runs again (under the workspace lock) and checks they are live.
func (e *Engine) refresh(ctx context.Context, runs []*tine.Run) ([]*tine.Run, error) {
	out := make([]*tine.Run, len(runs))
	err := e.store.View(ctx, func(tx tine.Tx) error {
		for i, r := range runs {
			var err error
			if out[i], err = tx.Run(r.ID); err != nil {
				return err
			}
			if !out[i].Active() {
				return fmt.Errorf("run %s is already %s: %w", r.Name, out[i].State, tine.ErrState)
			}
		}
		return nil
	})
	return out, err
}

// discardTx removes runs of workspace w: it checks that their work is
// merged and removes their records and files. Discard and Release make
// one.
type discardTx struct {
	e *Engine
	w *tine.Workspace
}

func newDiscardTx(e *Engine, w *tine.Workspace) *discardTx { return &discardTx{e: e, w: w} }

// checkMerged refuses runs that changed files since their fork point and
// were never merged or promoted.
func (d *discardTx) checkMerged(ctx context.Context, runs []*tine.Run) error {
	e, w := d.e, d.w
	var msgs []string
	for _, r := range runs {
		if r.Resolution != tine.ResolutionNone {
			continue
		}
		changes, err := e.Changes(ctx, Ref{w, r})
		if err != nil {
			return err
		}
		if len(changes) > 0 {
			msgs = append(msgs, fmt.Sprintf("%s (%d changed path(s))", r.Name, len(changes)))
		}
	}
	if len(msgs) > 0 {
		return tine.Optionf("not discarding: %s never merged or promoted; use %s to discard anyway: %w",
			strings.Join(msgs, ", "), tine.Opt("force"), tine.ErrUnmerged)
	}
	return nil
}

// removeFiles unmounts discarded runs' views and moves their directories
// into the trash, whose emptying deletes them in the background: the
// discard costs a rename per run, whatever the run's delta.
func (d *discardTx) removeFiles(ctx context.Context, runs []*tine.Run) error {
	for _, r := range runs {
		if err := d.unmountRun(r); err != nil {
			return fmt.Errorf("%s is discarded, but removing its files failed (the next tine command retries): %w", r.Name, err)
		}
		if err := faultPointCtx(ctx); err != nil { // its view unmounted, its directory left
			return err
		}
		if err := d.e.trash(ctx, KindRun, d.w.Backend, d.w.ID, d.e.lay.Run(d.w.ID, r.ID).Dir()); err != nil {
			return fmt.Errorf("%s is discarded, but removing its files failed (the next tine command retries): %w", r.Name, err)
		}
		if err := faultPointCtx(ctx); err != nil { // in the trash, not yet deleted
			return err
		}
	}
	return nil
}

// unmountRun unmounts discarded run r's view (a view a process still
// holds stays, and the error says so).
func (d *discardTx) unmountRun(r *tine.Run) error {
	view := d.e.lay.Run(d.w.ID, r.ID).View()
	if err := mnt.UnmountAll(view); err != nil {
		if errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("%s is in use by a process: %w", view, err)
		}
		return err
	}
	return nil
}

// trashRun moves discarded run r's directory into the trash, its view
// unmounted first. The sweeper runs it for a discard that died before.
func (d *discardTx) trashRun(ctx context.Context, r *tine.Run) error {
	if err := d.unmountRun(r); err != nil {
		return err
	}
	return d.e.trash(ctx, KindRun, d.w.Backend, d.w.ID, d.e.lay.Run(d.w.ID, r.ID).Dir())
}
