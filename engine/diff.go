package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"syscall"

	"github.com/aymanbagabas/go-udiff"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/display"
	"github.com/tinehq/tine/layer"
)

// maxPatchBytes bounds the files a text patch is made of.
const maxPatchBytes = 4 << 20

// Changes lists what run r changed since its fork point (for the source,
// since the workspace was taken under management).
func (e *Engine) Changes(ctx context.Context, r Ref) ([]layer.Change, error) {
	var out []layer.Change
	err := e.withOrigin(ctx, r, func(be layer.Backend, br layer.Run, base []string) error {
		var err error
		out, err = be.Changes(ctx, br, base)
		return err
	})
	return out, err
}

// Patch writes a unified diff of the text files of run r's work (Work)
// to w; binary and very large files get a one-line note instead. When its
// merge cannot be planned, the work is read as for a run without a parent.
func (e *Engine) Patch(ctx context.Context, r Ref, w io.Writer) error {
	work, err := e.Work(ctx, r)
	if err != nil {
		if work, err = e.workAlone(ctx, r); err != nil {
			return err
		}
	}
	return e.withOrigin(ctx, r, func(be layer.Backend, br layer.Run, base []string) error {
		dir, release, err := be.Read(ctx, base, filepath.Join(br.Dir, "patch-"+tine.NewID("")))
		if err != nil {
			return err
		}
		defer release()
		return writePatches(w, work.Changes, dir, br.View)
	})
}

// writePatches writes the patch of each change, reading the old side
// beneath oldDir and the new beneath newDir (a run's view, which the run
// may be changing meanwhile: through fstree.Root, never by name).
func writePatches(w io.Writer, changes []layer.Change, oldDir, newDir string) error {
	oldRoot, newRoot, done, err := openRoots(oldDir, newDir)
	if err != nil {
		return err
	}
	defer done()
	for _, c := range changes {
		if err := writePatch(w, c, oldRoot, newRoot); err != nil {
			return err
		}
	}
	return nil
}

// ForkPoint calls fn with a directory holding run r's fork point (the
// version it was forked from; for the source, the version the workspace
// was taken under management with), readable until fn returns. fn must
// not change it.
func (e *Engine) ForkPoint(ctx context.Context, r Ref, fn func(dir string) error) error {
	return e.withOrigin(ctx, r, func(be layer.Backend, br layer.Run, base []string) error {
		dir, release, err := be.Read(ctx, base, filepath.Join(br.Dir, "forkpoint-"+tine.NewID("")))
		if err != nil {
			return err
		}
		defer release()
		return fn(dir)
	})
}

func (e *Engine) withOrigin(ctx context.Context, r Ref, fn func(layer.Backend, layer.Run, []string) error) error {
	if !r.Run.Active() {
		return fmt.Errorf("run %s is %s and has no files to compare: %w", r.Run.Name, r.Run.State, tine.ErrState)
	}
	be, err := e.backend(r.Workspace.Backend)
	if err != nil {
		return err
	}
	origin, err := e.version(ctx, r.Run.Origin)
	if err != nil {
		return err
	}
	return fn(be, e.backendRun(r.Workspace, r.Run), e.layerPaths(origin))
}

// openRoots opens the two sides of a diff as fstree.Roots; done closes
// them.
func openRoots(oldDir, newDir string) (oldRoot, newRoot *fstree.Root, done func(), err error) {
	if oldRoot, err = fstree.OpenRoot(oldDir); err != nil {
		return nil, nil, nil, err
	}
	if newRoot, err = fstree.OpenRoot(newDir); err != nil {
		oldRoot.Close()
		return nil, nil, nil, err
	}
	return oldRoot, newRoot, func() { oldRoot.Close(); newRoot.Close() }, nil
}

func writePatch(w io.Writer, c layer.Change, oldRoot, newRoot *fstree.Root) error {
	if c.Type == "dir" && c.Kind != layer.TypeChanged {
		return nil
	}
	old, oerr := readText(oldRoot, c.Path, c.Kind != layer.Added)
	cur, cerr := readText(newRoot, c.Path, c.Kind != layer.Deleted)
	if oerr != nil || cerr != nil {
		_, err := fmt.Fprintf(w, "diff %s: %s\n", display.Path(c.Path), firstError(oerr, cerr))
		return err
	}
	name := display.Path(c.Path) // a name that is not printable UTF-8, quoted
	from, to := "a/"+name, "b/"+name
	if c.Kind == layer.Added {
		from = "/dev/null"
	}
	if c.Kind == layer.Deleted {
		to = "/dev/null"
	}
	_, err := io.WriteString(w, udiff.Unified(from, to, old, cur))
	return err
}

var errBinary = fmt.Errorf("binary or large file, no text diff")

// readText reads rel beneath root as text: a regular file's content, a
// symlink as its target, "" when it does not exist on that side or is
// something else. Nothing is followed: a parent that is a symlink by now
// (a run changing its view while it is read) is an error, and what is read
// is what the opened descriptor says it is.
func readText(root *fstree.Root, rel string, exists bool) (string, error) {
	if !exists {
		return "", nil
	}
	b, fi, err := root.ReadFileBeneath(rel, maxPatchBytes+1)
	switch {
	case err == nil && len(b) > maxPatchBytes:
		return "", errBinary
	case err == nil && bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0:
		return "", errBinary
	case err == nil:
		return string(b), nil
	case fi != nil || errors.Is(err, fs.ErrNotExist):
		return "", nil // a type change: a directory (or a device) on this side
	}
	lfi, lerr := root.Lstat(rel)
	switch {
	case lerr == nil && lfi.Mode()&fs.ModeSymlink != 0:
		t, err := root.Readlink(rel)
		return "symlink -> " + t + "\n", err
	case errors.Is(lerr, fs.ErrNotExist) || errors.Is(lerr, syscall.ENOTDIR):
		return "", nil
	case lerr != nil:
		return "", lerr
	}
	return "", err
}
