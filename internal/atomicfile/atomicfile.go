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

	"golang.org/x/sys/unix"
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
	// Whole makes Write sync the file before the rename, not the
	// directory after it: after a crash the path holds the old content
	// or the new one, never a file cut short, but which is not promised
	// (Durable promises the new).
	Whole
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
	if err = fill(f, data, perm, uid, gid, o); err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return err
	}
	if o&Durable != 0 {
		return SyncDir(filepath.Dir(path))
	}
	return nil
}

// WriteIn is WriteOwned of the file name in the open directory dir: every
// step goes through dir's descriptor, so a directory reached without
// following a symbolic link (another user's, a fork's) stays the one
// written whatever its path comes to name meanwhile.
func WriteIn(dir *os.File, name string, data []byte, perm fs.FileMode, uid, gid int, opts ...Option) error {
	var o Option
	for _, x := range opts {
		o |= x
	}
	var f *os.File
	var tmp string
	for range 100 {
		tmp = tempName(name)
		fd, err := unix.Openat(int(dir.Fd()), tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err == nil {
			f = os.NewFile(uintptr(fd), tmp)
			break
		}
		if !errors.Is(err, unix.EEXIST) {
			return &fs.PathError{Op: "create temporary file for", Path: name, Err: err}
		}
	}
	if f == nil {
		return &fs.PathError{Op: "create temporary file for", Path: name, Err: fs.ErrExist}
	}
	err := fill(f, data, perm, uid, gid, o)
	if err == nil {
		err = unix.Renameat(int(dir.Fd()), tmp, int(dir.Fd()), name)
	}
	if err != nil {
		unix.Unlinkat(int(dir.Fd()), tmp, 0)
		return err
	}
	if o&Durable != 0 {
		return dir.Sync()
	}
	return nil
}

// fill writes data to the new temporary file f, gives it to uid and gid,
// mode perm exactly with ExactMode, syncs it with Durable, and closes it.
func fill(f *os.File, data []byte, perm fs.FileMode, uid, gid int, o Option) error {
	err := func() error {
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
		if o&(Durable|Whole) != 0 {
			return f.Sync()
		}
		return nil
	}()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// tempName is a hidden temporary name beside base, random.
func tempName(base string) string {
	if len(base) > maxBase {
		base = base[:maxBase]
	}
	return "." + base + "." + strconv.FormatUint(rand.Uint64(), 36) + ".tmp"
}

// create makes a new temporary file beside path, never opening one that
// exists (nor following a symbolic link).
func create(path string, perm fs.FileMode) (*os.File, error) {
	dir, base := filepath.Split(path)
	for range 100 {
		name := filepath.Join(dir, tempName(base))
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
