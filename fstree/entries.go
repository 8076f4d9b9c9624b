package fstree

import (
	"context"
	"errors"
	"io/fs"
	"os"
)

// EntryCopier copies entries of a tree src into a tree dst one call at a
// time, each as Copy copies it (a directory with everything below it),
// keeping hard links among all the entries it copies: an incremental seal
// uses it to copy only what changed. Each entry is reached beneath src and
// written beneath dst without following a symlink on the way, as Copy
// does. It is not safe for concurrent use; Close releases it.
type EntryCopier struct {
	c   *copier
	src *Root
}

// NewEntryCopier returns an EntryCopier from the directory src into the
// directory dst that copies as Copy does with opt.
func NewEntryCopier(ctx context.Context, opt CopyOptions, src, dst string) (*EntryCopier, error) {
	c := &copier{ctx: ctx, opt: opt, root: os.Geteuid() == 0, links: map[inodeKey]string{}, top: src, dirs: map[string]string{}}
	c.xattrs = xattrPolicy{root: c.root}
	s, err := OpenRoot(src)
	if err != nil {
		return nil, err
	}
	if c.dst, err = OpenRoot(dst); err != nil {
		s.Close()
		return nil, err
	}
	return &EntryCopier{c: c, src: s}, nil
}

// Copy copies the entry rel (slash-separated, below src) to the same path
// below dst, whose parent exists. With SkipVanished an entry gone
// meanwhile is left out: Copy then returns nil and nothing is at dst.
func (e *EntryCopier) Copy(rel string) error {
	sp, srel, err := e.src.Pin(rel)
	if err != nil {
		if e.c.opt.SkipVanished && errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	defer srel()
	dp, drel, err := e.c.dst.Pin(rel)
	if err != nil {
		return err
	}
	defer drel()
	if err := e.c.copyEntry(sp, dp, rel); err != nil {
		return e.c.named(err)
	}
	return nil
}

// Close releases the two trees.
func (e *EntryCopier) Close() error {
	return errors.Join(e.src.Close(), e.c.dst.Close())
}

// Mknod makes a fifo, socket or device node (an overlay whiteout is the
// character device 0/0) at p, a path of any length, with mode 0600.
func Mknod(p string, t fs.FileMode, rdev uint64) error { return mknod(p, t, rdev) }
