// Package flock takes the advisory file locks that serialise tine's
// commands. The kernel drops a lock when its process dies, so a crash never
// leaves anything locked.
package flock

import (
	"fmt"
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
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(Wait)
	for {
		err := exclusive(f)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("another tine command holds %s: %w", path, tine.ErrBusy)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Try takes an exclusive lock on path without waiting; ok is false when
// another holds it (or it cannot be opened).
func Try(path string) (release func(), ok bool) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, false
	}
	if err := exclusive(f); err != nil {
		f.Close()
		return nil, false
	}
	return func() { f.Close() }, true
}

func exclusive(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) }
