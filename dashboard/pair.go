package dashboard

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"sort"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/layer"
)

// maxCompareBytes bounds the files compared byte by byte.
const maxCompareBytes = 4 << 20

// pairView is the difference between two forks: the paths where their
// files differ, and each side's patch.
type pairView struct {
	A, B  forkRow
	Paths []pathDiff
	Same  int       // paths both changed the same way
	Patch patchView // from a's files to b's, at the paths that differ
}

// pathDiff is one path the two forks left different.
type pathDiff struct {
	Path  string
	AKind string // what fork a did to it, or "—"
	BKind string
}

// pair compares forks a and b of comparison c.
func (h *Handler) pair(ctx context.Context, ws *tine.Workspace, c *engine.Comparison, a, b string) (*pairView, error) {
	fa, err := findFork(c, a)
	if err != nil {
		return nil, err
	}
	fb, err := findFork(c, b)
	if err != nil {
		return nil, err
	}
	ra, rb := engine.Ref{Workspace: ws, Run: fa.Run}, engine.Ref{Workspace: ws, Run: fb.Run}
	ca, err := h.e.Changes(ctx, ra)
	if err != nil {
		return nil, err
	}
	cb, err := h.e.Changes(ctx, rb)
	if err != nil {
		return nil, err
	}
	v := &pairView{A: forkRow{ForkSummary: *fa, Href: runHref(fa.Run.ID)}, B: forkRow{ForkSummary: *fb, Href: runHref(fb.Run.ID)}}
	v.Paths, v.Same = diffChanges(ca, cb, h.e.Path(ws, fa.Run), h.e.Path(ws, fb.Run))
	v.Patch = h.patchBetween(ctx, ra, rb, v.Paths)
	return v, nil
}

// patchBetween is the diff from a's files to b's at paths.
func (h *Handler) patchBetween(ctx context.Context, a, b engine.Ref, paths []pathDiff) patchView {
	ps := make([]string, len(paths))
	for i, p := range paths {
		ps[i] = p.Path
	}
	var buf bytes.Buffer
	if err := h.e.PatchBetween(ctx, a, b, ps, &buf); err != nil {
		return patchView{Err: err.Error()}
	}
	return splitPatch(buf.String())
}

// diffChanges lists the paths either fork changed where their files now
// differ (under roots da and db), and counts those where they agree. The
// forks own their views, so both are read beneath them (fstree.Root): a
// fork swapping a directory for a symlink to a host path has that path
// compared as a symlink, never its target.
func diffChanges(ca, cb []layer.Change, da, db string) ([]pathDiff, int) {
	ka, kb := kinds(ca), kinds(cb)
	paths := map[string]bool{}
	for p := range ka {
		paths[p] = true
	}
	for p := range kb {
		paths[p] = true
	}
	ra, rb := openView(da), openView(db)
	defer closeView(ra)
	defer closeView(rb)
	var out []pathDiff
	same := 0
	for p := range paths {
		if samePath(ra, rb, p) {
			same++
			continue
		}
		out = append(out, pathDiff{Path: p, AKind: orDefault(ka[p], "—"), BKind: orDefault(kb[p], "—")})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, same
}

// openView opens the view dir as a Root, nil when it cannot be opened
// (every path then compares as different).
func openView(dir string) *fstree.Root {
	r, err := fstree.OpenRoot(dir)
	if err != nil {
		return nil
	}
	return r
}

func closeView(r *fstree.Root) {
	if r != nil {
		r.Close()
	}
}

func kinds(cs []layer.Change) map[string]string {
	out := make(map[string]string, len(cs))
	for _, c := range cs {
		out[c.Path] = string(c.Kind)
	}
	return out
}

// samePath reports whether p has the same type and content (or link
// target) beneath a and b; both missing counts as the same. Directories
// compare equal by type: their entries are compared as paths of their
// own. A symlink on the way to p on either side makes p differ.
func samePath(a, b *fstree.Root, p string) bool {
	if a == nil || b == nil {
		return false
	}
	fa, ea := a.Lstat(p)
	fb, eb := b.Lstat(p)
	switch {
	case ea != nil || eb != nil:
		return errors.Is(ea, fs.ErrNotExist) && errors.Is(eb, fs.ErrNotExist)
	case fa.Mode().Type() != fb.Mode().Type():
		return false
	case fa.Mode()&os.ModeSymlink != 0:
		ta, _ := a.Readlink(p)
		tb, _ := b.Readlink(p)
		return ta == tb
	case !fa.Mode().IsRegular():
		return true
	case fa.Size() != fb.Size() || fa.Size() > maxCompareBytes:
		return false
	}
	ba, _, err1 := a.ReadFileBeneath(p, maxCompareBytes+1)
	bb, _, err2 := b.ReadFileBeneath(p, maxCompareBytes+1)
	return err1 == nil && err2 == nil && len(ba) <= maxCompareBytes && bytes.Equal(ba, bb)
}
