package engine

import (
	"os"

	"github.com/tinehq/tine/internal/flock"
)

// LockWorkspace serialises the commands that change workspace ws. While
// the lock is held the workspace is marked unfinished (layout's
// Workspace.Unfinished), and the mark stays if the holder dies or the
// engine warns meanwhile (what it could not put right waits for the
// sweeper): the next command then sweeps the workspace (sweepDue).
func (e *Engine) LockWorkspace(ws string) (func(), error) {
	unlock, err := flock.Lock(e.lay.Workspace(ws).Lock())
	if err != nil {
		return nil, err
	}
	return e.markUnfinished(ws, unlock), nil
}

// markUnfinished marks workspace ws, whose lock the caller took, as one a
// command works in, and returns what removes the mark (unless the command
// warned: the sweep then looks) and releases the lock. A mark that was
// there already (a command died or warned, and no sweep has looked since:
// a daemon's engine and a command it serves do not sweep when they open)
// stays for the sweep.
func (e *Engine) markUnfinished(ws string, unlock func()) func() {
	mark := e.lay.Workspace(ws).Unfinished()
	_, err := os.Lstat(mark)
	left := err == nil
	if f, err := os.OpenFile(mark, os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
		f.Close()
	}
	warned := e.warned.Load()
	return func() {
		if !left && e.warned.Load() == warned {
			os.Remove(mark)
		}
		unlock()
	}
}

// lockGlobal serialises commands that add or remove workspaces.
func (e *Engine) lockGlobal() (func(), error) {
	return flock.Lock(e.lay.WorkspacesLock())
}
