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
