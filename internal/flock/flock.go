// Package flock takes the advisory file locks that serialise tine's
// commands. The kernel drops a lock when its process dies, so a crash never
// leaves anything locked.
//
// A lock file may be unlinked (Remove, or a holder removing what it locks):
// a command that had opened it before and takes the lock afterwards finds
// that the file it holds is no longer the one at its path (their inodes
// differ, or the path is gone) and takes the lock again on the file now
// there, so two commands never hold one lock through two files.
package flock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/tinehq/tine"
	"golang.org/x/sys/unix"
)

// Wait is how long Lock waits for another tine command holding the same
// lock before giving up with tine.ErrBusy.
const Wait = 2 * time.Minute

// Lock takes an exclusive lock on path, creating it, waiting up to Wait,
// and returns the function that releases it.
func Lock(path string) (func(), error) {
	deadline := time.Now().Add(Wait)
	for {
		f, err := take(path)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) && !errors.Is(err, errUnlinked) {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("another tine command holds %s: %w", path, tine.ErrBusy)
		}
		if !errors.Is(err, errUnlinked) {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// Try takes an exclusive lock on path without waiting; ok is false when
// another holds it (or it cannot be opened).
func Try(path string) (release func(), ok bool) {
	for {
		f, err := take(path)
		switch {
		case err == nil:
			return func() { f.Close() }, true
		case !errors.Is(err, errUnlinked):
			return nil, false
		}
	}
}

// Remove unlinks the lock file at path when nobody holds it, holding it
// while it does (a command waiting on it then takes a file made anew), and
// reports whether it did. A missing file is not made.
func Remove(path string) bool {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if exclusive(f) != nil {
		return false
	}
	if same, err := atPath(f, path); err != nil || !same {
		return false // already unlinked, or replaced by one another may hold
	}
	return os.Remove(path) == nil
}

// errUnlinked is take's answer when the file it locked was unlinked (or
// replaced) before it held it.
var errUnlinked = errors.New("lock file unlinked while being taken")

// afterOpen, when set (by tests), runs between take's open and its lock:
// the window in which another command may unlink and remake the file.
var afterOpen func()

// take opens path, creating it, and locks it without waiting.
func take(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if afterOpen != nil {
		afterOpen()
	}
	if err := exclusive(f); err != nil {
		f.Close()
		return nil, err
	}
	same, err := atPath(f, path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		f.Close()
		return nil, err
	}
	if !same {
		f.Close()
		return nil, errUnlinked
	}
	return f, nil
}

// atPath reports whether f is the file at path.
func atPath(f *os.File, path string) (bool, error) {
	var held, now unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &held); err != nil {
		return false, err
	}
	if err := unix.Stat(path, &now); err != nil {
		return false, err
	}
	return held.Dev == now.Dev && held.Ino == now.Ino, nil
}

func exclusive(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) }

// Dir takes an exclusive lock on the existing directory dir itself, so
// nothing is created beside it, and returns the function that releases
// it. It waits up to Wait for another holder when wait is set, and
// otherwise fails at once with tine.ErrBusy; a missing dir fails with an
// error wrapping fs.ErrNotExist.
func Dir(dir string, wait bool) (func(), error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(Wait)
	for {
		err := exclusive(f)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", dir, err)
		}
		if !wait || time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("another tine command holds %s: %w", dir, tine.ErrBusy)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
