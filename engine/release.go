package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/mnt"
	"github.com/tinehq/tine/layer"
)

// releaseJournal marks a release whose staged copy of the source's files is
// complete, so the sweeper finishes it after a crash.
type releaseJournal struct {
	Path  string `json:"path"`
	Stage string `json:"stage"`
}

// Release stops managing the workspace at ref (a path, name or id): its
// directory is left holding, as plain files, exactly what the source run
// sees, and every fork's view is removed. Forks with unmerged changes are
// refused unless force is set.
func (e *Engine) Release(ctx context.Context, ref string, force bool) (*tine.Workspace, error) {
	w, err := e.FindWorkspace(ctx, ref)
	if err != nil {
		return nil, err
	}
	unlockAll, err := e.lockGlobal()
	if err != nil {
		return nil, err
	}
	defer unlockAll()
	unlock, err := e.lockWorkspace(w.ID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var src *tine.Run
	var forks []*tine.Run
	err = e.store.View(ctx, func(tx tine.Tx) error {
		runs, err := tx.Runs(tine.RunFilter{Workspace: w.ID, State: tine.StateActive})
		for _, r := range runs {
			if r.Role == tine.RoleSource {
				src = r
			} else {
				forks = append(forks, r)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if !force {
		if err := e.checkMerged(ctx, w, forks); err != nil {
			return nil, fmt.Errorf("releasing %s would remove forks: %w", w.Name, err)
		}
	}
	for _, r := range append(forks, src) {
		if r != nil {
			if err := e.stop(ctx, Ref{w, r}, "stop"); err != nil {
				return nil, err
			}
		}
	}
	if stacking(w.Backend) && src != nil {
		if err := e.stageSource(ctx, w, src); err != nil {
			return nil, err
		}
	}
	return w, e.finishRelease(ctx, w)
}

// stageSource copies the source's view into the workspace's state
// directory and journals that the copy is complete.
func (e *Engine) stageSource(ctx context.Context, w *tine.Workspace, src *tine.Run) error {
	stage := filepath.Join(e.wsDir(w.ID), "release")
	if err := os.RemoveAll(stage); err != nil {
		return err
	}
	if err := os.Mkdir(stage, 0o755); err != nil {
		return err
	}
	// Processes outside tine may still change the workspace: an entry that
	// vanishes while it is copied is left out, not an error.
	opt := fstree.CopyOptions{SkipVanished: true}
	if err := fstree.Copy(ctx, e.backendRun(w, src).View, stage, opt); err != nil {
		os.RemoveAll(stage)
		return fmt.Errorf("copying the source's files out: %w", err)
	}
	j, _ := json.Marshal(releaseJournal{Path: w.Path, Stage: stage})
	return writeFileAtomic(filepath.Join(e.wsDir(w.ID), "release.json"), j)
}

// finishRelease unmounts everything of the workspace, moves a staged copy
// into the workspace directory, and forgets the workspace. It is also what
// the sweeper runs to roll an interrupted release forward.
func (e *Engine) finishRelease(ctx context.Context, w *tine.Workspace) error {
	if err := e.unmountAll(w); err != nil {
		return err
	}
	if err := e.unstage(w); err != nil {
		return err
	}
	err := e.store.Update(ctx, func(tx tine.Tx) error { return tx.DeleteWorkspace(w.ID) })
	if err != nil {
		return err
	}
	os.Remove(e.wsDir(w.ID) + ".lock")
	return e.removeWorkspaceFiles(ctx, w)
}

// removeWorkspaceFiles deletes a workspace's state directory through its
// backend (subvolumes cannot simply be removed). A flat backend's source
// view is the workspace directory, outside the state directory, and stays.
func (e *Engine) removeWorkspaceFiles(ctx context.Context, w *tine.Workspace) error {
	be, err := e.backend(w.Backend)
	if err != nil {
		return err
	}
	runs, _ := os.ReadDir(filepath.Join(e.wsDir(w.ID), "runs"))
	for _, r := range runs {
		dir := filepath.Join(e.wsDir(w.ID), "runs", r.Name())
		if err := be.Deactivate(ctx, layer.Run{ID: r.Name(), Dir: dir, View: filepath.Join(dir, "view")}); err != nil {
			return err
		}
	}
	layers, _ := os.ReadDir(filepath.Join(e.wsDir(w.ID), "layers"))
	for _, l := range layers {
		if err := be.RemoveLayer(ctx, e.layerDir(w.ID, l.Name())); err != nil {
			return err
		}
	}
	return removeTree(e.wsDir(w.ID))
}

// unmountAll unmounts the workspace path and every run view of w.
func (e *Engine) unmountAll(w *tine.Workspace) error {
	if !stacking(w.Backend) {
		return nil
	}
	if err := mnt.UnmountAll(w.Path); err != nil {
		return fmt.Errorf("%s is in use by a process; close it and retry: %w", w.Path, err)
	}
	runs, _ := os.ReadDir(filepath.Join(e.wsDir(w.ID), "runs"))
	for _, r := range runs {
		if err := mnt.UnmountAll(filepath.Join(e.wsDir(w.ID), "runs", r.Name(), "view")); err != nil {
			return err
		}
	}
	return nil
}

// unstage moves the staged files, if any, into the emptied workspace directory.
func (e *Engine) unstage(w *tine.Workspace) error {
	stage := filepath.Join(e.wsDir(w.ID), "release")
	if _, err := os.Stat(filepath.Join(e.wsDir(w.ID), "release.json")); err != nil {
		return nil
	}
	os.Remove(filepath.Join(w.Path, markerName))
	err := fstree.MoveContents(stage, w.Path)
	if errors.Is(err, syscall.EXDEV) {
		err = fstree.Copy(context.Background(), stage, w.Path, fstree.CopyOptions{})
	}
	if err == nil {
		err = fstree.CopyAttrs(stage, w.Path)
	}
	if err != nil {
		return fmt.Errorf("restoring files into %s (they are safe in %s): %w", w.Path, stage, err)
	}
	return nil
}

// removeTree deletes a state directory, unmounting anything left mounted
// below it first, so a RemoveAll never descends into a live mount.
func removeTree(dir string) error {
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != dir {
			if ok, _ := mnt.IsMountpoint(p); ok {
				mnt.UnmountAll(p)
				return filepath.SkipDir
			}
		}
		return nil
	})
	err := os.RemoveAll(dir)
	if errors.Is(err, os.ErrPermission) {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o700)
			}
			return nil
		})
		err = os.RemoveAll(dir)
	}
	return err
}
