package dashboard

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/layer"
)

// maxCompareBytes bounds the files compared byte by byte.
const maxCompareBytes = 4 << 20

// pairView is the difference between two forks: the paths where their
// files differ, and each side's patch.
type pairView struct {
	A, B  forkRow
	Paths []pathDiff
	Same  int // paths both changed the same way
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
	v.A.Patch, v.B.Patch = h.patch(ctx, ra), h.patch(ctx, rb)
	v.Paths, v.Same = diffChanges(ca, cb, h.e.Path(ws, fa.Run), h.e.Path(ws, fb.Run))
	return v, nil
}

// diffChanges lists the paths either fork changed where their files now
// differ (under roots da and db), and counts those where they agree.
func diffChanges(ca, cb []layer.Change, da, db string) ([]pathDiff, int) {
	ka, kb := kinds(ca), kinds(cb)
	paths := map[string]bool{}
	for p := range ka {
		paths[p] = true
	}
	for p := range kb {
		paths[p] = true
	}
	var out []pathDiff
	same := 0
	for p := range paths {
		if samePath(filepath.Join(da, p), filepath.Join(db, p)) {
			same++
			continue
		}
		out = append(out, pathDiff{Path: p, AKind: orDefault(ka[p], "—"), BKind: orDefault(kb[p], "—")})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, same
}

func kinds(cs []layer.Change) map[string]string {
	out := make(map[string]string, len(cs))
	for _, c := range cs {
		out[c.Path] = string(c.Kind)
	}
	return out
}

// samePath reports whether a and b have the same type and content (or
// link target); both missing counts as the same. Directories compare equal
// by type: their entries are compared as paths of their own.
func samePath(a, b string) bool {
	fa, ea := os.Lstat(a)
	fb, eb := os.Lstat(b)
	switch {
	case ea != nil || eb != nil:
		return os.IsNotExist(ea) && os.IsNotExist(eb)
	case fa.Mode().Type() != fb.Mode().Type():
		return false
	case fa.Mode()&os.ModeSymlink != 0:
		ta, _ := os.Readlink(a)
		tb, _ := os.Readlink(b)
		return ta == tb
	case !fa.Mode().IsRegular():
		return true
	case fa.Size() != fb.Size() || fa.Size() > maxCompareBytes:
		return false
	}
	return sameContent(a, b)
}

func sameContent(a, b string) bool {
	ba, err1 := readAll(a)
	bb, err2 := readAll(b)
	return err1 == nil && err2 == nil && bytes.Equal(ba, bb)
}

func readAll(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxCompareBytes+1))
	if len(b) > maxCompareBytes {
		return nil, fmt.Errorf("%s is too large to compare", p)
	}
	return b, err
}
