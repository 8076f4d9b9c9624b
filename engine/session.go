package engine

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/cgroup"
	"github.com/tinehq/tine/supervisor"
)

// The processes running inside a run are those in its cgroup other than
// its supervisor and, where there is no supervisor (without root), the
// commands started by tine exec, each of which registers its process id
// under the run's directory while it runs; resolutions refuse to write
// under a running process.

func (e *Engine) sessionDir(r Ref) string {
	return e.lay.Run(r.Workspace.ID, r.Run.ID).Sessions()
}

// AddSession records that process pid runs inside run r.
func (e *Engine) AddSession(r Ref, pid int) error {
	dir := e.sessionDir(r)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, strconv.Itoa(pid)), []byte(supervisor.StartTime(pid)), 0o600)
}

// RemoveSession forgets process pid of run r.
func (e *Engine) RemoveSession(r Ref, pid int) {
	os.Remove(filepath.Join(e.sessionDir(r), strconv.Itoa(pid)))
}

// Sessions lists the processes running in run r: those of its cgroup but
// its supervisor, and the registered tine exec commands still alive (the
// ones that are gone are forgotten).
func (e *Engine) Sessions(r Ref) []int {
	out := e.cgroupProcs(r)
	ents, _ := os.ReadDir(e.sessionDir(r))
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		want, _ := os.ReadFile(filepath.Join(e.sessionDir(r), ent.Name()))
		alive := syscall.Kill(pid, 0)
		if (alive == nil || alive == syscall.EPERM) && supervisor.StartTime(pid) == string(want) {
			out = append(out, pid)
			continue
		}
		e.RemoveSession(r, pid)
	}
	return out
}

// checkIdle refuses to write into run r while commands run in it, unless
// force is set, in which case it warns.
func (e *Engine) checkIdle(r Ref, force bool) error {
	pids := e.Sessions(r)
	if len(pids) == 0 {
		return nil
	}
	if force {
		e.warn("writing into %s while %d process(es) run in it (%v)", r.Run.Name, len(pids), pids)
		return nil
	}
	return tine.Optionf("%d process(es) run in %s (%v); wait for them or use %s: %w", len(pids), r.Run.Name, pids, tine.Opt("force"), tine.ErrBusy)
}

// cgroupProcs lists the processes of r's cgroup but its supervisor.
func (e *Engine) cgroupProcs(r Ref) []int {
	cg, err := cgroup.Load(r.Run.ID)
	if err != nil {
		return nil
	}
	pids, _ := cg.Procs()
	sup := e.supervised(r)
	return slices.DeleteFunc(pids, func(p int) bool { return p == sup })
}
