package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/flock"
	"github.com/tinehq/tine/internal/mnt"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/layout"
	"github.com/tinehq/tine/merge"
)

// sweeper puts right, when the engine opens, what interrupted commands
// left behind: it finishes or undoes each journaled transaction (init,
// seal by rename, merge, rollback, release) and sets aside what the store
// has no record of. It runs before the engine answers anything else, on
// the workspaces where something may be left (sweepDue), or on all of them
// when all is set (Sweep).
type sweeper struct {
	e   *Engine
	all bool
}

func newSweeper(e *Engine) *sweeper { return &sweeper{e: e} }

// sweep puts right what interrupted commands left: it finishes or undoes
// journaled inits and releases, removes what the store says is garbage
// (discarded runs), moves aside into the quarantine what the store has no
// record of, and brings every live run's view back in line with the store,
// remounting what a reboot unmounted. It never deletes a directory merely
// because the store does not know it. Workspaces another command is working
// on are left alone.
func (s *sweeper) sweep(ctx context.Context) error {
	e := s.e
	entries, err := os.ReadDir(e.lay.Workspaces())
	if err != nil {
		return err
	}
	for _, ent := range entries {
		if !ent.IsDir() {
			continue
		}
		var w *tine.Workspace
		err := e.store.View(ctx, func(tx tine.Tx) error {
			var err error
			w, err = tx.Workspace(ent.Name())
			return err
		})
		switch {
		case errors.Is(err, tine.ErrNotFound):
			s.sweepOrphan(ctx, ent.Name())
		case err != nil:
			return err
		default:
			s.sweepWorkspace(ctx, w)
		}
	}
	return nil
}

// sweepOrphan handles a workspace directory without a record. Two are
// proven garbage by their own journals: an init that never finished (its
// journal says where the user's files go back to), and a release that did
// (its staged copy is back in the workspace directory, so the stage is
// empty). Anything else, such as a workspace whose init the store lost, is
// moved aside.
func (s *sweeper) sweepOrphan(ctx context.Context, id string) {
	e := s.e
	unlock, ok := flock.Try(e.lay.WorkspacesLock())
	if !ok {
		return
	}
	defer unlock()
	dir := e.lay.Workspace(id).Dir()
	if b, err := os.ReadFile(filepath.Join(dir, "init.json")); err == nil && isInitLeftover(dir) {
		var j initJournal
		if err := json.Unmarshal(b, &j); err != nil {
			e.warn("unreadable init journal %s: %v", filepath.Join(dir, "init.json"), err)
			return
		}
		if err := s.undoInit(j, dir); err != nil {
			e.warn("an interrupted init of %s could not be undone (the files are safe in %s): %v", j.Path, j.Layer, err)
			return
		}
		if hasUserWrites(dir) {
			e.quarantine(KindWorkspace, id, "", dir, "an interrupted init was undone, but its source had files written")
			return
		}
		if err := removeTree(dir); err != nil {
			e.warn("removing %s: %v", dir, err)
		}
		return
	}
	if releaseFinished(dir) {
		// Its views were unmounted before the release committed.
		if err := e.trash(ctx, KindWorkspace, "", id, dir); err != nil {
			e.warn("%v", err)
		}
		return
	}
	e.quarantine(KindWorkspace, id, "", dir, "the store has no record of this workspace")
}

// hasUserWrites reports whether a run of workspace directory dir has a
// non-empty upper directory (files written through its view).
func hasUserWrites(dir string) bool {
	runs, _ := os.ReadDir(layout.WorkspaceAt(dir).Runs())
	for _, r := range runs {
		ents, _ := os.ReadDir(filepath.Join(dir, "runs", r.Name(), "upper"))
		if len(ents) > 0 {
			return true
		}
	}
	return false
}

// releaseFinished reports whether workspace directory dir is what a
// committed release leaves: its journal, and a stage already moved back.
func releaseFinished(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "release.json")); err != nil {
		return false
	}
	ents, err := os.ReadDir(filepath.Join(dir, "release"))
	return errors.Is(err, os.ErrNotExist) || err == nil && len(ents) == 0
}

// undoInit moves the files of an interrupted init back to the workspace directory.
func (s *sweeper) undoInit(j initJournal, dir string) error {
	if err := mnt.UnmountAll(j.Path); err != nil {
		return err
	}
	runs, _ := os.ReadDir(layout.WorkspaceAt(dir).Runs())
	for _, r := range runs {
		if err := mnt.UnmountAll(filepath.Join(dir, "runs", r.Name(), "view")); err != nil {
			return err
		}
	}
	if _, err := os.Stat(j.Layer); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return moveBack(j.Layer, j.Path)
}

// sweepWorkspace tidies one workspace under its lock.
func (s *sweeper) sweepWorkspace(ctx context.Context, w *tine.Workspace) {
	e := s.e
	if !s.all && !e.sweepDue(ctx, w) {
		return
	}
	unlock, ok := flock.Try(e.lay.Workspace(w.ID).Lock())
	if !ok {
		return
	}
	defer unlock()
	warned := e.warned.Load()
	s.tidyWorkspace(ctx, w)
	if _, err := os.Stat(e.lay.Workspace(w.ID).Dir()); err == nil && e.warned.Load() == warned {
		e.markSwept(w.ID)
	}
}

// tidyWorkspace puts right what is left in workspace w, whose lock the
// caller holds.
func (s *sweeper) tidyWorkspace(ctx context.Context, w *tine.Workspace) {
	e := s.e
	// The record proves the init committed: a journal it left is stale, and
	// must not be taken for an interrupted init if the store is ever lost.
	os.Remove(e.lay.Workspace(w.ID).InitJournal())
	if _, err := os.Stat(e.lay.Workspace(w.ID).ReleaseJournal()); err == nil {
		if err := newReleaseTx(e, w).finish(ctx); err != nil {
			e.warn("finishing the release of %s: %v", w.Path, err)
		}
		return
	}
	be, err := e.backend(w.Backend)
	if err != nil {
		e.warn("workspace %s: %v", w.Name, err)
		return
	}
	runs, layers, err := s.records(ctx, w.ID)
	if err != nil {
		e.warn("workspace %s: %v", w.Name, err)
		return
	}
	for _, r := range runs {
		if r.Active() {
			e.rt.ThawAbandoned(Ref{w, r})
			for _, p := range e.sweepScratch(e.lay.Run(w.ID, r.ID).Dir()) {
				e.say("removed %s, which a command that died left mounted", p)
			}
		}
	}
	for _, r := range runs {
		if r.Active() {
			if err := newSealTx(e, Ref{w, r}).recoverMove(ctx, be); err != nil {
				e.warn("run %s of %s: recovering an interrupted seal: %v", r.Name, w.Name, err)
				return // leave its layer alone until this is resolved
			}
		}
	}
	s.sweepMaking(ctx, be, w, runs, layers)
	s.removeUnknown(ctx, be, w, runs, layers)
	for _, r := range runs {
		if r.Active() {
			if err := s.reconcile(ctx, be, w, r); err != nil {
				e.warn("run %s of %s: %v", r.Name, w.Name, err)
			}
		}
	}
	for _, r := range runs {
		journal := e.lay.Run(w.ID, r.ID).MergeJournal()
		if _, err := os.Stat(journal); err == nil && r.Active() {
			complete := func(note json.RawMessage) error { return e.completeMerge(ctx, w.ID, note) }
			if err := merge.Recover(ctx, journal, complete); err != nil {
				e.warn("recovering an interrupted merge into %s: %v", r.Name, err)
			}
		}
	}
}

func (s *sweeper) records(ctx context.Context, ws string) (map[string]*tine.Run, map[string]bool, error) {
	e := s.e
	runs := map[string]*tine.Run{}
	layers := map[string]bool{}
	err := e.store.View(ctx, func(tx tine.Tx) error {
		rs, err := tx.Runs(tine.RunFilter{Workspace: ws})
		for _, r := range rs {
			runs[r.ID] = r
		}
		if err != nil {
			return err
		}
		ls, err := tx.Layers(ws)
		for _, l := range ls {
			layers[l.ID] = true
		}
		return err
	})
	return runs, layers, err
}

// removeUnknown removes the directories of discarded runs (the store says
// they are garbage) and moves aside those of runs and layers it has no
// record of. A release stage no journal vouches for is deleted: it is an
// unfinished copy of the source's view, whose layers still hold the files.
func (s *sweeper) removeUnknown(ctx context.Context, be layer.Backend, w *tine.Workspace, runs map[string]*tine.Run, layers map[string]bool) {
	e := s.e
	dirs, _ := os.ReadDir(e.lay.Workspace(w.ID).Runs())
	for _, d := range dirs {
		r := runs[d.Name()]
		dir := e.lay.Run(w.ID, d.Name()).Dir()
		switch {
		case r == nil:
			// Its view's files are its upper directory and layers (or, for a
			// flat backend, the view itself, which is no mount): unmounting
			// loses nothing, and a view something still holds moves aside
			// mounted.
			if err := mnt.UnmountAll(filepath.Join(dir, "view")); err != nil {
				e.warn("unmounting the view of unknown run %s: %v", d.Name(), err)
			}
			e.quarantine(KindRun, w.ID, w.Backend, dir, fmt.Sprintf("workspace %s: the store has no record of this run", w.Name))
		case !r.Active():
			if err := newDiscardTx(e, w).trashRun(ctx, r); err != nil {
				e.warn("removing discarded run %s: %v", r.Name, err)
			}
		}
	}
	ls, _ := os.ReadDir(e.lay.Workspace(w.ID).Layers())
	for _, l := range ls {
		if !layers[l.Name()] {
			e.quarantine(KindLayer, w.ID, w.Backend, e.lay.Workspace(w.ID).Layer(l.Name()), fmt.Sprintf("workspace %s: the store has no record of this layer", w.Name))
		}
	}
	os.RemoveAll(e.lay.Workspace(w.ID).ReleaseDir())
}

// reconcile makes a live run's view match the store: a view of another
// version (an interrupted rollback) is replaced, a missing one recreated, an
// unmounted one remounted over its delta.
func (s *sweeper) reconcile(ctx context.Context, be layer.Backend, w *tine.Workspace, r *tine.Run) error {
	e := s.e
	br := e.backendRun(w, r)
	v, err := e.version(ctx, r.Base)
	if err != nil {
		return err
	}
	if have := readBase(br); have != r.Base {
		return s.finishRollback(ctx, be, w, r, br, v, have)
	}
	if !e.backends.stacking(w.Backend) {
		if _, err := os.Lstat(br.View); errors.Is(err, os.ErrNotExist) {
			var u undo
			return e.activate(ctx, be, w, r, br, e.layerPaths(v), v.ID, &u)
		}
		return nil
	}
	if rs, ok := be.(layer.Restorer); ok {
		if err := rs.Restore(ctx, br, e.layerPaths(v)); err != nil {
			return err
		}
	}
	if r.Role == tine.RoleSource {
		return bindSource(w, br)
	}
	return nil
}

// bindSource makes the workspace path show the source's view: bound there
// if nothing is, re-bound if it shows another run's (an interrupted promote).
func bindSource(w *tine.Workspace, br layer.Run) error {
	if ok, err := mnt.IsMountpoint(w.Path); err == nil && ok {
		dw, err1 := layer.Device(w.Path)
		dv, err2 := layer.Device(br.View)
		if err1 == nil && err2 == nil && dw == dv {
			return nil
		}
		if err := mnt.UnmountAll(w.Path); err != nil {
			return err
		}
	}
	return mnt.Bind(br.View, w.Path)
}

// finishRollback replaces a view of another version than the store's (a
// rollback interrupted between its record and its remount). Whatever the
// view holds is saved as a version first, so even a wrong guess loses nothing.
func (s *sweeper) finishRollback(ctx context.Context, be layer.Backend, w *tine.Workspace, r *tine.Run, br layer.Run, v *tine.Version, have string) error {
	e := s.e
	e.say("run %s: finishing an interrupted rollback to %s", r.Name, r.Base)
	if old, err := e.version(ctx, have); err == nil {
		if rs, ok := be.(layer.Restorer); ok {
			if err := rs.Restore(ctx, br, e.layerPaths(old)); err != nil {
				return err
			}
		}
		cur := *r
		cur.Base = have
		if _, err := e.save(ctx, be, Ref{w, &cur}, "recovered before finishing a rollback"); err != nil {
			return err
		}
	}
	return e.reactivate(ctx, be, w, r, br, v)
}
