package engine

import "github.com/tinehq/tine/internal/flock"

// LockWorkspace serialises the commands that change workspace ws.
func (e *Engine) LockWorkspace(ws string) (func(), error) {
	return flock.Lock(e.lay.Workspace(ws).Dir() + ".lock")
}

// lockGlobal serialises commands that add or remove workspaces.
func (e *Engine) lockGlobal() (func(), error) {
	return flock.Lock(e.lay.WorkspacesLock())
}
