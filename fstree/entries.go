package fstree

import (
	"context"
	"io/fs"
	"os"
)

// EntryCopier copies entries of a tree one call at a time, each as Copy
// copies it (a directory with everything below it), keeping hard links
// among all the entries it copies: an incremental seal uses it to copy only
// what changed. It is not safe for concurrent use.
type EntryCopier struct{ c *copier }

// NewEntryCopier returns an EntryCopier that copies as Copy does with opt.
func NewEntryCopier(ctx context.Context, opt CopyOptions) *EntryCopier {
	c := &copier{ctx: ctx, opt: opt, root: os.Geteuid() == 0, links: map[inodeKey]string{}}
	c.xattrs = xattrPolicy{root: c.root}
	return &EntryCopier{c: c}
}

// Copy copies the entry src to the new path dst, whose parent exists. With
// SkipVanished an entry gone meanwhile is left out: Copy then returns nil
// and nothing is at dst.
func (e *EntryCopier) Copy(src, dst string) error { return e.c.copyEntry(src, dst) }

// Mknod makes a fifo, socket or device node (an overlay whiteout is the
// character device 0/0) at p, a path of any length, with mode 0600.
func Mknod(p string, t fs.FileMode, rdev uint64) error { return mknod(p, t, rdev) }
