// Package atomicfile is the one way tine replaces a file whole: the data
// goes to a new temporary file beside it, which is renamed over it, so a
// reader (or a crash) finds the old content or the new, never a part of
// either, and a failed write leaves the old file as it was and no
// temporary file behind.
//
// The temporary file is created with O_EXCL under a random hidden name
// (".NAME.RANDOM.tmp"), so a symbolic link or another writer's file at a
// fixed name is never written through or clobbered, and the rename
// replaces a symbolic link at the path rather than following it. Listings
// of tine's directories skip it by its leading dot or its ".tmp" suffix.
//
// github.com/google/renameio is not used: it does not sync the directory
// after the rename (which the journals need), always syncs the file (an
// fsync the frequent, undurable writes never had) and keeps an existing
// file's mode; see docs/architecture.md, "One atomic write".
package atomicfile

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// Option changes how Write writes.
type Option uint8

const (
	// Durable makes Write sync the file before the rename and the
	// directory after it, so that the new content survives a crash once
	// Write has returned.
	Durable Option = 1 << iota
	// ExactMode gives the file perm exactly, not perm less the umask.
	ExactMode
)

// maxBase bounds how much of the file's name goes into the temporary
// name, which must stay within NAME_MAX (255) with its prefix and suffix.
const maxBase = 200

// Write replaces the file at path with data, atomically. The new file has
// permissions perm less the umask (as os.WriteFile), or perm exactly with
// ExactMode, and belongs to the calling process's user. On failure the
// file at path is left as it was and the temporary file is removed.
func Write(path string, data []byte, perm fs.FileMode, opts ...Option) error {
	return WriteOwned(path, data, perm, -1, -1, opts...)
}

// WriteOwned is Write for a file that belongs to uid and gid (-1: the
// calling process's, as os.Chown): the new file is theirs before it
// replaces the old, so a reader as that user is never refused in between.
func WriteOwned(path string, data []byte, perm fs.FileMode, uid, gid int, opts ...Option) (err error) {
	var o Option
	for _, x := range opts {
		o |= x
	}
	f, err := create(path, perm)
	if err != nil {
		return err
	}
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				f.Close()
			}
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if uid >= 0 || gid >= 0 {
		if err := f.Chown(uid, gid); err != nil {
			return err
		}
	}
	if o&ExactMode != 0 {
		if err := f.Chmod(perm); err != nil {
			return err
		}
	}
	if o&Durable != 0 {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	closed = true
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	if o&Durable != 0 {
		return SyncDir(filepath.Dir(path))
	}
	return nil
}

// create makes a new temporary file beside path, never opening one that
// exists (nor following a symbolic link).
func create(path string, perm fs.FileMode) (*os.File, error) {
	dir, base := filepath.Split(path)
	if len(base) > maxBase {
		base = base[:maxBase]
	}
	for range 100 {
		name := filepath.Join(dir, "."+base+"."+strconv.FormatUint(rand.Uint64(), 36)+".tmp")
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, &fs.PathError{Op: "create temporary file for", Path: path, Err: fs.ErrExist}
}

// SyncDir flushes directory dir's entries (a rename or removal in it) to
// stable storage.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
