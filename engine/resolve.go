package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tinehq/tine/fstree"

	"github.com/tinehq/tine"
)

// Ref is a resolved run reference: the run and its workspace.
type Ref struct {
	Workspace *tine.Workspace `json:"workspace"`
	Run       *tine.Run       `json:"run"`
}

// FindRun resolves ref, which is a run id, WORKSPACE/NAME, or a bare run
// name. A bare name is looked up first in the workspace that contains the
// current directory, then in every workspace; a name found in several is
// ambiguous.
func (e *Engine) FindRun(ctx context.Context, ref string) (Ref, error) {
	var out Ref
	err := e.store.View(ctx, func(tx tine.Tx) error {
		var err error
		out, err = findRun(tx, ref)
		return err
	})
	return out, err
}

func findRun(tx tine.Tx, ref string) (Ref, error) {
	if IsPathRef(ref) {
		return sourceAt(tx, ref)
	}
	if wsRef, name, ok := strings.Cut(ref, "/"); ok {
		w, err := findWorkspace(tx, wsRef)
		if err != nil {
			return Ref{}, err
		}
		r, err := tx.RunByName(w.ID, name)
		if err != nil {
			return Ref{}, fmt.Errorf("no run %q in workspace %s: %w", name, w.Name, tine.ErrNotFound)
		}
		return Ref{w, r}, nil
	}
	if tine.LooksLikeID(tine.PrefixRun, ref) {
		if r, err := tx.Run(ref); err == nil {
			w, err := tx.Workspace(r.Workspace)
			return Ref{w, r}, err
		}
	}
	if w, err := workspaceOfCwd(tx); err == nil {
		if r, err := tx.RunByName(w.ID, ref); err == nil {
			return Ref{w, r}, nil
		}
	}
	return findRunByName(tx, ref)
}

// IsPathRef reports whether a run reference is written as a path (absolute,
// or starting with . or ..): it names the source of the workspace there.
func IsPathRef(ref string) bool {
	return filepath.IsAbs(ref) || ref == "." || ref == ".." ||
		strings.HasPrefix(ref, "./") || strings.HasPrefix(ref, "../")
}

// sourceAt returns the source run of the workspace at or above path p.
func sourceAt(tx tine.Tx, p string) (Ref, error) {
	abs, err := canonical(p)
	if err != nil {
		abs, _ = filepath.Abs(p)
	}
	w, err := workspaceAt(tx, abs)
	if errors.Is(err, tine.ErrNotFound) {
		return Ref{}, fmt.Errorf("no workspace at %s (see tine ls): %w", abs, tine.ErrNotFound)
	}
	if err != nil {
		return Ref{}, err
	}
	runs, err := tx.Runs(tine.RunFilter{Workspace: w.ID})
	if err != nil {
		return Ref{}, err
	}
	for _, r := range runs {
		if r.Role == tine.RoleSource {
			return Ref{w, r}, nil
		}
	}
	return Ref{}, fmt.Errorf("workspace %s has no source: %w", w.Name, tine.ErrNotFound)
}

func findRunByName(tx tine.Tx, name string) (Ref, error) {
	all, err := tx.Workspaces()
	if err != nil {
		return Ref{}, err
	}
	var found []Ref
	for _, w := range all {
		if r, err := tx.RunByName(w.ID, name); err == nil {
			found = append(found, Ref{w, r})
		}
	}
	switch len(found) {
	case 0:
		return Ref{}, fmt.Errorf("no run %q (see tine ls): %w", name, tine.ErrNotFound)
	case 1:
		return found[0], nil
	}
	return Ref{}, fmt.Errorf("run name %q is in %d workspaces; write WORKSPACE/%s: %w", name, len(found), name, tine.ErrInvalid)
}

// FindWorkspace resolves ref: a workspace id, name or path.
func (e *Engine) FindWorkspace(ctx context.Context, ref string) (*tine.Workspace, error) {
	var w *tine.Workspace
	err := e.store.View(ctx, func(tx tine.Tx) error {
		var err error
		w, err = findWorkspace(tx, ref)
		return err
	})
	return w, err
}

func findWorkspace(tx tine.Tx, ref string) (*tine.Workspace, error) {
	if w, err := tx.Workspace(ref); err == nil {
		return w, nil
	}
	if w, err := tx.WorkspaceByName(ref); err == nil {
		return w, nil
	}
	if fi, err := os.Stat(ref); err == nil && fi.IsDir() {
		if p, err := canonical(ref); err == nil {
			if w, err := tx.WorkspaceByPath(p); err == nil {
				return w, nil
			}
		}
	} else if IsPathRef(ref) {
		// Its directory is gone (deleted by hand): the path as written
		// still names it, so it can be released.
		if p, err := filepath.Abs(ref); err == nil {
			if w, err := tx.WorkspaceByPath(p); err == nil {
				return w, nil
			}
		}
	}
	return nil, fmt.Errorf("no workspace %q (see tine ls): %w", ref, tine.ErrNotFound)
}

// workspaceOfCwd returns the workspace whose path contains the current directory.
func workspaceOfCwd(tx tine.Tx) (*tine.Workspace, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	return workspaceAt(tx, cwd)
}

// workspaceAt returns the workspace whose path contains the absolute path
// p, or tine.ErrNotFound.
func workspaceAt(tx tine.Tx, p string) (*tine.Workspace, error) {
	all, err := tx.Workspaces()
	if err != nil {
		return nil, err
	}
	for _, w := range all {
		if fstree.Within(p, w.Path) {
			return w, nil
		}
	}
	return nil, tine.ErrNotFound
}

// canonical returns the absolute path of p with symlinks resolved.
func canonical(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if errors.Is(err, os.ErrNotExist) {
		return abs, err
	}
	return real, err
}
