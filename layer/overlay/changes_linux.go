package overlay

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/layer"
	"golang.org/x/sys/unix"
)

// Changes lists where r's view differs from the version made of base. When
// base is the bottom of r's mounted stack (the usual case: the fork point),
// only the paths named in the layers above it and in r's upper directory are
// examined, so the cost follows the size of the delta, not of the tree.
// Each such path is then compared with base, so a file changed and changed
// back is not listed. Otherwise the two trees are compared whole.
func (b *Backend) Changes(ctx context.Context, r layer.Run, base []string) ([]layer.Change, error) {
	mounted, err := readLayers(r)
	if err != nil {
		return nil, err
	}
	baseView, release, err := b.Read(ctx, base, filepath.Join(r.Dir, "base-"+tine.NewID("")))
	if err != nil {
		return nil, err
	}
	defer release()
	if len(base) > len(mounted) || !slices.Equal(base, mounted[:len(base)]) {
		return fstree.Diff(ctx, baseView, r.View)
	}
	c := &candidates{paths: map[string]bool{}, opaque: map[string]bool{}}
	for _, dir := range append(slices.Clone(mounted[len(base):]), upper(r)) {
		if err := c.scan(dir); err != nil {
			return nil, err
		}
	}
	if err := c.scanRedirected(r.View); err != nil {
		return nil, err
	}
	return c.compare(ctx, baseView, r.View)
}

// candidates are the paths a delta names, and the directories it marks
// opaque or redirected.
type candidates struct {
	paths      map[string]bool
	opaque     map[string]bool
	redirected []string
}

// scanRedirected makes every path the view shows below a redirected
// directory a candidate: its entries come from the lower directory it was
// renamed from, so the delta does not name them. Like an opaque one, such
// a directory hides what base had at its path.
func (c *candidates) scanRedirected(view string) error {
	for _, rel := range c.redirected {
		c.opaque[rel] = true
		root := filepath.Join(view, rel)
		err := fstree.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			sub, _ := filepath.Rel(view, p)
			c.paths[sub] = true
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}

func (c *candidates) scan(dir string) error {
	return fstree.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		c.paths[rel] = true
		if d.IsDir() && isOpaque(p) {
			c.opaque[rel] = true
		}
		if d.IsDir() && hasRedirect(p) {
			c.redirected = append(c.redirected, rel)
		}
		return nil
	})
}

// isOpaque reports whether the directory at p (in an upper directory or a
// layer) hides what the layers below have at its path.
func isOpaque(p string) bool {
	v, err := fstree.Lgetxattr(p, "trusted.overlay.opaque")
	return err == nil && string(v) == "y"
}

// compare turns candidates into changes by looking at each in base and view.
func (c *candidates) compare(ctx context.Context, base, view string) ([]layer.Change, error) {
	d := &differ{base: base, view: view, seen: map[string]bool{}}
	paths := make([]string, 0, len(c.paths))
	for p := range c.paths {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := d.path(p, c.opaque[p]); err != nil {
			return nil, err
		}
	}
	sort.Slice(d.out, func(i, j int) bool { return d.out[i].Path < d.out[j].Path })
	return d.out, nil
}

type differ struct {
	base, view string
	seen       map[string]bool
	out        []layer.Change
}

func (d *differ) emit(p string, k layer.Kind, old, cur fs.FileInfo) {
	if d.seen[p] {
		return
	}
	d.seen[p] = true
	ch := layer.Change{Path: filepath.ToSlash(p), Kind: k}
	if cur != nil {
		ch.Type, ch.Size = layer.TypeOf(cur.Mode()), layer.SizeOf(cur)
	} else {
		ch.Type = layer.TypeOf(old.Mode())
	}
	if old != nil {
		ch.OldSize = layer.SizeOf(old)
	}
	d.out = append(d.out, ch)
}

func (d *differ) path(p string, opaque bool) error {
	old, oerr := lstat(filepath.Join(d.base, p))
	cur, cerr := lstat(filepath.Join(d.view, p))
	if oerr != nil || cerr != nil {
		return firstErr(oerr, cerr)
	}
	switch {
	case old == nil && cur == nil:
		return nil
	case old == nil:
		d.emit(p, layer.Added, nil, cur)
	case cur == nil:
		d.emit(p, layer.Deleted, old, nil)
		return d.goneBelow(p, old)
	case old.Mode().Type() != cur.Mode().Type():
		d.emit(p, layer.TypeChanged, old, cur)
		return d.goneBelow(p, old)
	case old.IsDir():
		if old.Mode().Perm() != cur.Mode().Perm() {
			d.emit(p, layer.Modified, old, cur)
		}
		if opaque {
			return d.goneBelow(p, old)
		}
	default:
		same, err := fstree.SamePath(filepath.Join(d.base, p), filepath.Join(d.view, p))
		if err != nil {
			return err
		}
		if !same {
			d.emit(p, layer.Modified, old, cur)
		}
	}
	return nil
}

// goneBelow lists as deleted every path under base directory p that the view
// no longer has at the same place.
func (d *differ) goneBelow(p string, old fs.FileInfo) error {
	if !old.IsDir() {
		return nil
	}
	root := filepath.Join(d.base, p)
	return fstree.WalkDir(root, func(q string, e fs.DirEntry, err error) error {
		if err != nil || q == root {
			return err
		}
		rel := filepath.Join(p, q[len(root)+1:])
		if _, err := fstree.Lstat(filepath.Join(d.view, rel)); err == nil {
			return nil // still there: a candidate of its own if it changed
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		d.emit(rel, layer.Deleted, info, nil)
		return nil
	})
}

func lstat(p string) (fs.FileInfo, error) {
	fi, err := fstree.Lstat(p)
	if err != nil && (os.IsNotExist(err) || isNotDir(err)) {
		return nil, nil
	}
	return fi, err
}

func isNotDir(err error) bool {
	pe, ok := err.(*fs.PathError)
	return ok && pe.Err == unix.ENOTDIR
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
