package fstree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// CopyOptions tunes Copy.
type CopyOptions struct {
	// Reflink clones file data with FICLONE instead of copying bytes.
	Reflink bool
	// RequireReflink makes a failed clone an error instead of a byte copy.
	RequireReflink bool
}

// Copy copies the contents of directory src into directory dst, which must
// exist and be empty. Hard links inside src stay hard links inside dst.
//
// Everything a file carries is kept: type (regular, directory, symlink,
// fifo, socket, character and block device, so overlay whiteouts too),
// permission bits with setuid, setgid and sticky, owner (ignored when not
// permitted and not root), access and modification times, and extended
// attributes, trusted.* included when root. src's own metadata is applied to
// dst. Symlinks are never followed. Without opt.Reflink file data moves with
// copy_file_range where the kernel has it. ctx is checked between entries.
func Copy(ctx context.Context, src, dst string, opt CopyOptions) error {
	if err := checkEmptyDir(dst); err != nil {
		return fmt.Errorf("fstree: copy %s: %w", src, err)
	}
	fi, err := os.Lstat(src)
	if err == nil && !fi.IsDir() {
		err = &fs.PathError{Op: "copy", Path: src, Err: syscall.ENOTDIR}
	}
	if err != nil {
		return fmt.Errorf("fstree: copy: %w", err)
	}
	c := &copier{ctx: ctx, opt: opt, root: os.Geteuid() == 0, links: map[inodeKey]string{}}
	if err := c.copyDir(src, dst, fi); err != nil {
		return fmt.Errorf("fstree: copy %s to %s: %w", src, dst, err)
	}
	return nil
}

// copier holds the state of one Copy.
type copier struct {
	ctx     context.Context
	opt     CopyOptions
	root    bool                // running as root: owner and xattr errors count
	noClone bool                // FICLONE failed once; do not retry per file
	links   map[inodeKey]string // first destination of each multiply-linked inode
}

// checkEmptyDir returns an error unless dir is an empty directory.
func checkEmptyDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("%s is not empty (holds %q): %w", dir, names[0], fs.ErrExist)
}

// readNames returns the names in directory dir, unsorted.
func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// copyDir copies the contents of src into the existing directory dst, then
// gives dst the metadata of src (fi), times last, so that creating the
// contents does not disturb them.
func (c *copier) copyDir(src, dst string, fi fs.FileInfo) error {
	names, err := readNames(src)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		if err := c.copyEntry(filepath.Join(src, name), filepath.Join(dst, name)); err != nil {
			return err
		}
	}
	return c.setMeta(src, dst, fi)
}

// copyEntry copies one entry of any type from src to the new path dst.
func (c *copier) copyEntry(src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		if err := os.Mkdir(dst, 0o700); err != nil {
			return err
		}
		return c.copyDir(src, dst, fi)
	}
	if st := statOf(fi); st.nlink > 1 {
		if first, ok := c.links[st.key()]; ok {
			return os.Link(first, dst)
		}
		c.links[st.key()] = dst
	}
	if err := c.create(src, dst, fi); err != nil {
		return err
	}
	return c.setMeta(src, dst, fi)
}

// create makes dst a non-directory of the same type and content as src.
func (c *copier) create(src, dst string, fi fs.FileInfo) error {
	switch t := fi.Mode().Type(); {
	case t == 0:
		return c.copyFile(src, dst)
	case t == fs.ModeSymlink:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	case isSpecial(t):
		return mknod(dst, t, statOf(fi).rdev)
	default:
		return &fs.PathError{Op: "copy", Path: src, Err: fmt.Errorf("unsupported file type %v", t)}
	}
}

// copyFile copies the regular file src to the new file dst.
func (c *copier) copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := c.fill(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// fill writes in's data into the empty file out: a clone when asked for and
// possible, bytes otherwise.
func (c *copier) fill(out, in *os.File) error {
	if c.opt.Reflink && !c.noClone {
		err := cloneFile(out, in)
		if err == nil {
			return nil
		}
		if c.opt.RequireReflink {
			return err
		}
		c.noClone = true
	}
	if _, err := io.Copy(out, in); err != nil {
		return fmt.Errorf("copy %s to %s: %w", in.Name(), out.Name(), err)
	}
	return nil
}

// setMeta gives dst the owner, permission bits, extended attributes and
// times of src (described by fi), in the order that keeps each: chown
// clears setuid bits and capabilities, so it comes first.
func (c *copier) setMeta(src, dst string, fi fs.FileInfo) error {
	st := statOf(fi)
	if err := c.chown(dst, st); err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		if err := os.Chmod(dst, permBits(fi)); err != nil {
			return err
		}
	}
	if err := copyXattrs(src, dst, c.root); err != nil {
		return err
	}
	return lchtimes(dst, fi.Mode(), st.atime, fi.ModTime())
}

// chown gives dst the owner in st, ignoring refusals when not root.
func (c *copier) chown(dst string, st inode) error {
	err := os.Lchown(dst, st.uid, st.gid)
	if err == nil || errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	if !c.root && (errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EINVAL)) {
		return nil
	}
	return err
}

// CopyAttrs gives dst the owner, permission bits and times of src, without
// copying content or extended attributes: it makes a directory that stands
// in for another (an overlay upper, a workspace root) look like it.
func CopyAttrs(src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return fmt.Errorf("fstree: attributes of %s: %w", src, err)
	}
	c := &copier{root: os.Geteuid() == 0}
	st := statOf(fi)
	if err := c.chown(dst, st); err != nil {
		return fmt.Errorf("fstree: chown %s: %w", dst, err)
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		if err := os.Chmod(dst, permBits(fi)); err != nil {
			return fmt.Errorf("fstree: chmod %s: %w", dst, err)
		}
	}
	return lchtimes(dst, fi.Mode(), st.atime, fi.ModTime())
}
