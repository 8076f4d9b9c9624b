package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

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

// Patch writes a unified diff of run r's changed text files since its fork
// point to w; binary and very large files get a one-line note instead.
func (e *Engine) Patch(ctx context.Context, r Ref, w io.Writer) error {
	return e.withOrigin(ctx, r, func(be layer.Backend, br layer.Run, base []string) error {
		changes, err := be.Changes(ctx, br, base)
		if err != nil {
			return err
		}
		dir, release, err := be.Read(ctx, base, filepath.Join(br.Dir, "patch-"+tine.NewID("")))
		if err != nil {
			return err
		}
		defer release()
		for _, c := range changes {
			if err := writePatch(w, c, dir, br.View); err != nil {
				return err
			}
		}
		return nil
	})
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

func writePatch(w io.Writer, c layer.Change, oldDir, newDir string) error {
	if c.Type == "dir" && c.Kind != layer.TypeChanged {
		return nil
	}
	old, oerr := readText(filepath.Join(oldDir, c.Path), c.Kind != layer.Added)
	cur, cerr := readText(filepath.Join(newDir, c.Path), c.Kind != layer.Deleted)
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

// readText reads a regular file as text (a symlink as its target), or ""
// when it does not exist on that side.
func readText(p string, exists bool) (string, error) {
	if !exists {
		return "", nil
	}
	fi, err := fstree.Lstat(p)
	if err != nil {
		return "", nil // a type change: the other side is a directory
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		t, err := fstree.Readlink(p)
		return "symlink -> " + t + "\n", err
	case !fi.Mode().IsRegular():
		return "", nil
	case fi.Size() > maxPatchBytes:
		return "", errBinary
	}
	b, err := fstree.ReadFile(p)
	if err != nil {
		return "", err
	}
	if bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
		return "", errBinary
	}
	return string(b), nil
}
