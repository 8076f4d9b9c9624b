package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"

	"github.com/tinehq/tine/cgroup"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/livefork"
	"github.com/tinehq/tine/supervisor"
)

// restoreAll checkpoints each qualifying service's tree once and
// restores it into every launched fork at once. It returns, per fork, the
// outcome of each candidate.
func (m *Manager) restoreAll(ctx context.Context, p engine.Ref, forks []launched, cands []candidate) map[string]map[int]liveOutcome {
	out := map[string]map[int]liveOutcome{}
	for _, f := range forks {
		if f.pid != 0 {
			out[f.ref.Run.ID] = map[int]liveOutcome{}
		}
	}
	var mu sync.Mutex
	record := func(f launched, c candidate, o liveOutcome) {
		mu.Lock()
		out[f.ref.Run.ID][c.Pid] = o
		mu.Unlock()
	}
	screen, cands := m.displayGroup(ctx, p, cands)
	if len(screen) > 0 {
		m.criuDisplay(ctx, p, forks, screen, record)
	}
	for _, c := range cands {
		m.criuService(ctx, p, forks, c, func(f launched, o liveOutcome) { record(f, c, o) })
	}
	return out
}

// criuService checkpoints service c of p into a tmpfs of p's supervisor
// directory (mode 0700: the images hold the process's memory), restores
// it into each fork in parallel, and removes the images.
func (m *Manager) criuService(ctx context.Context, p engine.Ref, forks []launched, c candidate, done func(launched, liveOutcome)) {
	dir, remove, err := livefork.ImagesDir(filepath.Join(m.supDir(p), fmt.Sprintf("criu-%d", c.Pid)))
	var d *livefork.Dump
	if err == nil {
		defer remove()
		d, err = livefork.CRIUDump(ctx, livefork.DumpSpec{Pid: c.Pid, Namespaces: m.supervised(p), Dir: dir, Hidden: m.hiddenIn(p)})
	}
	var wg sync.WaitGroup
	for _, f := range forks {
		if f.pid == 0 {
			continue
		}
		if err != nil {
			done(f, liveOutcome{err: err})
			continue
		}
		wg.Go(func() { done(f, m.restoreInto(ctx, d, f, c, nil)) })
	}
	wg.Wait()
}

// hiddenIn lists the paths p's view covers, below which a file its
// processes hold is checkpointed as external.
func (m *Manager) hiddenIn(p engine.Ref) []string {
	hidden := []string{m.lay.Root()}
	if a := readConfinement(m.supDir(p)); a != nil {
		hidden = append(hidden, a.Hidden...)
	}
	return hidden
}

// restoreInto restores d, the tree of c, into fork f, giving it sockets
// for its external unix sockets (livefork.RestoreSpec.Sockets). On
// failure any process criu left in the fork's cgroup is killed.
func (m *Manager) restoreInto(ctx context.Context, d *livefork.Dump, f launched, c candidate, sockets map[uint64]*os.File) liveOutcome {
	cg, err := cgroup.Load(f.ref.Run.ID)
	if err != nil {
		return liveOutcome{err: err}
	}
	work, err := os.MkdirTemp(m.supDir(f.ref), "criu-restore-")
	if err != nil {
		return liveOutcome{err: err}
	}
	defer os.RemoveAll(work)
	plan, err := m.copyConfinement(f.ref)
	if err != nil {
		return liveOutcome{err: err}
	}
	before, _ := cg.Procs()
	r, err := d.Restore(ctx, livefork.RestoreSpec{Namespaces: f.pid, PidBase: supervisor.PidBase, CgroupProcs: cg.ProcsFiles(), WorkDir: work,
		Files:   func(e livefork.ExternalFile) (string, int, error) { return m.criuFile(f.ref, c, e) },
		Confine: plan, Sockets: sockets})
	if err == nil {
		if after, _ := cg.Procs(); !slices.Contains(after, r.Pid) {
			err = fmt.Errorf("criu restored pid %d, which is not in %s's cgroup", r.NSPid, f.ref.Run.Name)
		}
	}
	if err != nil {
		killNew(cg, before)
		return liveOutcome{err: err}
	}
	return liveOutcome{res: livefork.Result{Pid: c.Pid, Child: r.Pid, Pause: d.Pause}, took: d.Took + r.Took, engine: engine.LiveCRIU, confined: plan}
}

// killNew kills the processes in cg that were not in it before.
func killNew(cg *cgroup.Group, before []int) {
	after, _ := cg.Procs()
	for _, pid := range after {
		if !slices.Contains(before, pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// criuFile is the fork's replacement for a file the tree of c held
// outside its view: /dev/null for /dev/null, the fork's log of c for its
// standard output and error. Anything else refuses the restore.
func (m *Manager) criuFile(r engine.Ref, c candidate, e livefork.ExternalFile) (string, int, error) {
	switch {
	case e.Path == "/dev/null":
		return "/dev/null", os.O_RDWR, nil
	case e.FD == 1 || e.FD == 2:
		return filepath.Join(m.LogDir(r), logName(c)+".log"), os.O_WRONLY | os.O_APPEND | os.O_CREATE, nil
	}
	return "", 0, fmt.Errorf("%w: fd %d of process %d is %s, outside the run's view", livefork.ErrCRIUFailed, e.FD, e.Pid, e.Path)
}
