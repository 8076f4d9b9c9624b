package fstree

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tinehq/tine/layer"
)

// Diff walks two trees and lists, sorted by path, where view differs from
// base, using SamePath semantics.
//
// A path on one side only is Added or Deleted; a path whose type differs is
// TypeChanged; a path whose signature differs is Modified. A directory on
// one side only is listed together with every path beneath it, so deleting
// a directory lists its files as deleted too.
//
// Like git's stat cache, Diff trusts metadata for regular files: when type,
// permission bits, size and modification time (to the nanosecond) are equal,
// the file counts as unchanged without its bytes being read. Copy and
// snapshots keep modification times, so a file rewritten with the same size
// within the same timestamp tick, or whose time was reset by hand, is missed.
// SamePath always compares bytes.
func Diff(ctx context.Context, base, view string) ([]layer.Change, error) {
	d := &differ{ctx: ctx, base: base, view: view}
	if err := d.dir("."); err != nil {
		return nil, fmt.Errorf("fstree: diff %s and %s: %w", base, view, err)
	}
	slices.SortFunc(d.out, func(x, y layer.Change) int { return strings.Compare(x.Path, y.Path) })
	return d.out, nil
}

// differ holds the state of one Diff. Paths named rel are slash-separated
// and relative to the roots.
type differ struct {
	ctx        context.Context
	base, view string
	out        []layer.Change
}

// dir compares directory rel, which is a directory on both sides.
func (d *differ) dir(rel string) error {
	bn, err := sortedNames(d.at(d.base, rel))
	if err != nil {
		return err
	}
	vn, err := sortedNames(d.at(d.view, rel))
	if err != nil {
		return err
	}
	for len(bn) > 0 || len(vn) > 0 {
		if err := d.ctx.Err(); err != nil {
			return err
		}
		name, inBase, inView := nextName(bn, vn)
		if inBase {
			bn = bn[1:]
		}
		if inView {
			vn = vn[1:]
		}
		if err := d.entry(path.Join(rel, name), inBase, inView); err != nil {
			return err
		}
	}
	return nil
}

// nextName returns the smaller of the heads of the sorted lists bn and vn and
// which lists it heads.
func nextName(bn, vn []string) (name string, inBase, inView bool) {
	switch {
	case len(vn) == 0 || (len(bn) > 0 && bn[0] < vn[0]):
		return bn[0], true, false
	case len(bn) == 0 || vn[0] < bn[0]:
		return vn[0], false, true
	default:
		return bn[0], true, true
	}
}

// entry compares path rel, present in base, in view or in both.
func (d *differ) entry(rel string, inBase, inView bool) error {
	var bi, vi fs.FileInfo
	var err error
	if inBase {
		if bi, err = Lstat(d.at(d.base, rel)); err != nil {
			return err
		}
	}
	if inView {
		if vi, err = Lstat(d.at(d.view, rel)); err != nil {
			return err
		}
	}
	switch {
	case vi == nil:
		return d.gone(rel, bi, layer.Deleted, nil)
	case bi == nil:
		return d.gone(rel, nil, layer.Added, vi)
	case bi.Mode().Type() != vi.Mode().Type():
		return d.typeChanged(rel, bi, vi)
	}
	return d.both(rel, bi, vi)
}

// both compares rel, of the same type on both sides.
func (d *differ) both(rel string, bi, vi fs.FileInfo) error {
	same, err := sameEntry(d.at(d.base, rel), d.at(d.view, rel), bi, vi, true)
	if err != nil {
		return err
	}
	if !same {
		d.add(rel, layer.Modified, bi, vi)
	}
	if bi.IsDir() {
		return d.dir(rel)
	}
	return nil
}

// typeChanged records rel changing type, and the subtree of a directory that
// appeared or vanished with it.
func (d *differ) typeChanged(rel string, bi, vi fs.FileInfo) error {
	d.add(rel, layer.TypeChanged, bi, vi)
	if bi.IsDir() {
		if err := d.subtree(d.base, rel, layer.Deleted); err != nil {
			return err
		}
	}
	if vi.IsDir() {
		return d.subtree(d.view, rel, layer.Added)
	}
	return nil
}

// gone records rel as Added or Deleted (kind), with everything beneath it
// when it is a directory.
func (d *differ) gone(rel string, bi fs.FileInfo, kind layer.Kind, vi fs.FileInfo) error {
	d.add(rel, kind, bi, vi)
	if kind == layer.Deleted && bi.IsDir() {
		return d.subtree(d.base, rel, kind)
	}
	if kind == layer.Added && vi.IsDir() {
		return d.subtree(d.view, rel, kind)
	}
	return nil
}

// subtree records every path beneath directory rel of root as kind.
func (d *differ) subtree(root, rel string, kind layer.Kind) error {
	names, err := sortedNames(d.at(root, rel))
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := d.ctx.Err(); err != nil {
			return err
		}
		p := path.Join(rel, name)
		fi, err := Lstat(d.at(root, p))
		if err != nil {
			return err
		}
		if kind == layer.Deleted {
			err = d.gone(p, fi, kind, nil)
		} else {
			err = d.gone(p, nil, kind, fi)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// add appends a change of path rel; old and cur describe it in base and view
// (nil where absent).
func (d *differ) add(rel string, kind layer.Kind, old, cur fs.FileInfo) {
	c := layer.Change{Path: rel, Kind: kind}
	if cur != nil {
		c.Type, c.Size = layer.TypeOf(cur.Mode()), layer.SizeOf(cur)
	} else {
		c.Type = layer.TypeOf(old.Mode())
	}
	if old != nil {
		c.OldSize = layer.SizeOf(old)
	}
	d.out = append(d.out, c)
}

// at returns the filesystem path of rel under root.
func (d *differ) at(root, rel string) string {
	return filepath.Join(root, filepath.FromSlash(rel))
}

// sortedNames returns the names in directory dir, sorted.
func sortedNames(dir string) ([]string, error) {
	names, err := readNames(dir)
	slices.Sort(names)
	return names, err
}
