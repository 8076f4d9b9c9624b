package fstree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// RemoveAll removes path and everything beneath it like os.RemoveAll. When a
// read-only directory is in the way (as when not root) it makes every
// directory beneath path writable and tries again. A missing path is not an
// error.
func RemoveAll(path string) error {
	err := os.RemoveAll(path)
	if err != nil && errors.Is(err, fs.ErrPermission) {
		makeWritable(path)
		err = os.RemoveAll(path)
	}
	if err != nil {
		return fmt.Errorf("fstree: remove: %w", err)
	}
	return nil
}

// makeWritable gives the owner full access to every directory under root,
// best effort: errors surface in the RemoveAll that follows.
func makeWritable(root string) {
	_ = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
}
