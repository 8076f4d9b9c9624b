//go:build !linux

package fstree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"
)

// errNoClone is what cloneFile returns where FICLONE does not exist.
var errNoClone = fmt.Errorf("FICLONE: %w", errors.ErrUnsupported)

// cloneFile is not available on this platform.
func cloneFile(dst, _ *os.File) error {
	return &os.PathError{Op: "clone", Path: dst.Name(), Err: errNoClone}
}

// mknod is not available on this platform.
func mknod(path string, _ fs.FileMode, _ uint64) error {
	return &os.PathError{Op: "mknod", Path: path, Err: errors.ErrUnsupported}
}

// lchtimes sets the times of path; symlinks keep theirs, since the portable
// call would follow them.
func lchtimes(path string, mode fs.FileMode, atime, mtime time.Time) error {
	if mode&fs.ModeSymlink != 0 {
		return nil
	}
	return os.Chtimes(path, atime, mtime)
}

// renameNoReplace renames oldpath to newpath, failing if newpath exists.
func renameNoReplace(oldpath, newpath string) error {
	return renameChecked(oldpath, newpath)
}

// copyXattrs does nothing: extended attributes are copied on Linux only.
func copyXattrs(_, _ string, _ xattrPolicy) error { return nil }

// heldPrefix returns p: off Linux a held directory's entries are named by
// path.
func heldPrefix(_ *os.File, p string) string { return p }

// lchmod sets the permission bits of p, leaving a symlink's alone.
func lchmod(p string, mode fs.FileMode) error {
	if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil
	}
	return os.Chmod(p, mode)
}
