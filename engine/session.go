package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/tinehq/tine"
)

// Until runs have supervisors, the processes running inside a run are the
// commands started by tine exec; each registers its process id under the
// run's directory while it runs, so resolutions can refuse to write under
// a running process.

func (e *Engine) sessionDir(r Ref) string {
	return filepath.Join(e.runDir(r.Workspace.ID, r.Run.ID), "sessions")
}

// AddSession records that process pid runs inside run r.
func (e *Engine) AddSession(r Ref, pid int) error {
	dir := e.sessionDir(r)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, strconv.Itoa(pid)), []byte(startTime(pid)), 0o600)
}

// startTime identifies a process incarnation (field 22 of /proc/PID/stat),
// so a recycled process id is not mistaken for the registered process. It
// is "" where /proc is not available.
func startTime(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		if f := strings.Fields(s[i+1:]); len(f) > 19 {
			return f[19]
		}
	}
	return ""
}

// RemoveSession forgets process pid of run r.
func (e *Engine) RemoveSession(r Ref, pid int) {
	os.Remove(filepath.Join(e.sessionDir(r), strconv.Itoa(pid)))
}

// Sessions lists the registered processes of run r that are still alive,
// forgetting the ones that are gone.
func (e *Engine) Sessions(r Ref) []int {
	ents, _ := os.ReadDir(e.sessionDir(r))
	var out []int
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		want, _ := os.ReadFile(filepath.Join(e.sessionDir(r), ent.Name()))
		alive := syscall.Kill(pid, 0)
		if (alive == nil || alive == syscall.EPERM) && startTime(pid) == string(want) {
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
	return fmt.Errorf("%d process(es) run in %s (%v); wait for them or use --force: %w", len(pids), r.Run.Name, pids, tine.ErrBusy)
}
