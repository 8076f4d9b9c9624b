package engine

import (
	"fmt"
	"os"
	"time"

	"github.com/tinehq/tine"
	"golang.org/x/sys/unix"
)

// lockWait is how long a command waits for another tine command working on
// the same workspace before giving up with ErrBusy.
const lockWait = 2 * time.Minute

// lock takes an exclusive advisory lock on path, creating it, and returns
// the function that releases it. The kernel drops the lock if the process
// dies, so a crash never leaves a workspace locked.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(lockWait)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
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

// lockWorkspace serialises the commands that change workspace ws.
func (e *Engine) lockWorkspace(ws string) (func(), error) {
	return lock(e.lay.Workspace(ws).Dir() + ".lock")
}

// lockGlobal serialises commands that add or remove workspaces.
func (e *Engine) lockGlobal() (func(), error) {
	return lock(e.home + "/workspaces.lock")
}

func flockNB(f *os.File) error { return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) }
