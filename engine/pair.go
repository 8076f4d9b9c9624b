package engine

import (
	"context"
	"fmt"
	"io"
	"io/fs"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/layer"
)

// PatchBetween writes a unified diff from run a's files to run b's at
// paths (workspace-relative): what git diff between two branches shows,
// not each run against its fork point. A path neither has is left out;
// one only b has is added, one only a has deleted; directories have no
// text. Both views are read beneath them (fstree.Root), as Patch reads
// one: a run swapping a directory for a symlink is diffed as a symlink.
func (e *Engine) PatchBetween(ctx context.Context, a, b Ref, paths []string, w io.Writer) error {
	for _, r := range []Ref{a, b} {
		if !r.Run.Active() {
			return fmt.Errorf("run %s is %s and has no files to compare: %w", r.Run.Name, r.Run.State, tine.ErrState)
		}
	}
	ra, rb, done, err := openRoots(e.Path(a.Workspace, a.Run), e.Path(b.Workspace, b.Run))
	if err != nil {
		return err
	}
	defer done()
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return err
		}
		c, ok := pairChange(ra, rb, p)
		if !ok {
			continue
		}
		if err := writePatch(w, c, ra, rb); err != nil {
			return err
		}
	}
	return nil
}

// pairChange is what path p is from root a to root b, as a change of
// writePatch's; false when neither has it or both have a directory.
func pairChange(a, b *fstree.Root, p string) (layer.Change, bool) {
	fa, ea := a.Lstat(p)
	fb, eb := b.Lstat(p)
	c := layer.Change{Path: p, Kind: layer.Modified}
	switch {
	case ea != nil && eb != nil:
		return c, false
	case ea != nil:
		c.Kind, c.Type = layer.Added, typeOf(fb)
	case eb != nil:
		c.Kind, c.Type = layer.Deleted, typeOf(fa)
	case fa.Mode().Type() != fb.Mode().Type():
		c.Kind = layer.TypeChanged
	case fa.Mode().Type() == fs.ModeDir:
		return c, false
	}
	return c, true
}

// typeOf is "dir" for a directory, "" for anything else: writePatch
// writes no text for an added or deleted directory.
func typeOf(fi fs.FileInfo) string {
	if fi.IsDir() {
		return "dir"
	}
	return ""
}
