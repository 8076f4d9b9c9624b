//go:build !linux

package fstree

import (
	"errors"
	"io/fs"
	"os"
	"time"
)

// OpenFile is os.OpenFile; paths longer than PATH_MAX are handled on Linux
// only.
func OpenFile(p string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(p, flag, perm)
}

// Lstat is os.Lstat.
func Lstat(p string) (fs.FileInfo, error) { return os.Lstat(p) }

// Readlink is os.Readlink.
func Readlink(p string) (string, error) { return os.Readlink(p) }

// Mkdir is os.Mkdir.
func Mkdir(p string, perm fs.FileMode) error { return os.Mkdir(p, perm) }

// Symlink is os.Symlink.
func Symlink(target, p string) error { return os.Symlink(target, p) }

// Chmod is os.Chmod.
func Chmod(p string, mode fs.FileMode) error { return os.Chmod(p, mode) }

// Lchown is os.Lchown.
func Lchown(p string, uid, gid int) error { return os.Lchown(p, uid, gid) }

// Remove is os.Remove.
func Remove(p string) error { return os.Remove(p) }

// Link is os.Link.
func Link(oldp, newp string) error { return os.Link(oldp, newp) }

// Rename is os.Rename.
func Rename(oldp, newp string) error { return os.Rename(oldp, newp) }

// Lgetxattr reports that extended attributes are read on Linux only.
func Lgetxattr(p, name string) ([]byte, error) {
	return nil, &os.PathError{Op: "lgetxattr " + name, Path: p, Err: errors.ErrUnsupported}
}

// removeAll is os.RemoveAll.
func removeAll(p string) error { return os.RemoveAll(p) }

// Llistxattr reports that extended attributes are read on Linux only.
func Llistxattr(p string) ([]string, error) {
	return nil, &os.PathError{Op: "llistxattr", Path: p, Err: errors.ErrUnsupported}
}

// Lsetxattr reports that extended attributes are written on Linux only.
func Lsetxattr(p, name string, _ []byte) error {
	return &os.PathError{Op: "lsetxattr " + name, Path: p, Err: errors.ErrUnsupported}
}

// Lremovexattr reports that extended attributes are removed on Linux only.
func Lremovexattr(p, name string) error {
	return &os.PathError{Op: "lremovexattr " + name, Path: p, Err: errors.ErrUnsupported}
}

// Lchtimes sets the times of p; a symlink keeps its own, since the
// portable call would follow it.
func Lchtimes(p string, atime, mtime time.Time) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	return lchtimes(p, fi.Mode(), atime, mtime)
}
