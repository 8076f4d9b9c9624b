package runtime

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/cgroup"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/supervisor"
)

// The processes running inside a run are those in its cgroup other than
// its supervisor and, where there is no supervisor (without root), the
// commands started by tine exec, each of which registers its process id
// under the run's directory while it runs; resolutions refuse to write
// under a running process.

func (m *Manager) sessionDir(r engine.Ref) string {
	return m.lay.Run(r.Workspace.ID, r.Run.ID).Sessions()
}

// AddSession records that process pid runs inside run r.
func (m *Manager) AddSession(r engine.Ref, pid int) error {
	dir := m.sessionDir(r)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, strconv.Itoa(pid)), []byte(supervisor.StartTime(pid)), 0o600)
}

// RemoveSession forgets process pid of run r.
func (m *Manager) RemoveSession(r engine.Ref, pid int) {
	os.Remove(filepath.Join(m.sessionDir(r), strconv.Itoa(pid)))
}

// Sessions lists the processes running in run r: those of its cgroup but
// its supervisor, and the registered tine exec commands still alive (the
// ones that are gone are forgotten).
func (m *Manager) Sessions(r engine.Ref) []int {
	out := m.cgroupProcs(r)
	ents, _ := os.ReadDir(m.sessionDir(r))
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		want, _ := os.ReadFile(filepath.Join(m.sessionDir(r), ent.Name()))
		alive := syscall.Kill(pid, 0)
		if (alive == nil || alive == syscall.EPERM) && supervisor.StartTime(pid) == string(want) {
			out = append(out, pid)
			continue
		}
		m.RemoveSession(r, pid)
	}
	return out
}

// checkIdle refuses to write into run r while commands run in it, unless
// force is set, in which case it warns.
func (m *Manager) checkIdle(r engine.Ref, force bool) error {
	pids := m.Sessions(r)
	if len(pids) == 0 {
		return nil
	}
	if force {
		m.warn("writing into %s while %d process(es) run in it (%v)", r.Run.Name, len(pids), pids)
		return nil
	}
	return tine.Optionf("%d process(es) run in %s (%v); wait for them or use %s: %w", len(pids), r.Run.Name, pids, tine.Opt("force"), tine.ErrBusy)
}

// cgroupProcs lists the processes of r's cgroup but its supervisor.
func (m *Manager) cgroupProcs(r engine.Ref) []int {
	cg, err := cgroup.Load(r.Run.ID)
	if err != nil {
		return nil
	}
	pids, _ := cg.Procs()
	sup := m.supervised(r)
	return slices.DeleteFunc(pids, func(p int) bool { return p == sup })
}
