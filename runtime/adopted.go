package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/confine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/atomicfile"
	"github.com/tinehq/tine/internal/procfs"
	"github.com/tinehq/tine/internal/tick"
)

// A process forked live into a fork (livefork_ptrace.go) is cloned in its
// origin's pid namespace, the kernel moving no process to another: it
// lives in the fork's mount and network namespaces and cgroup, but it ends
// when its origin's supervisor does. The fork records it in
// sup/adopted.json, naming the run it came from; stopping that run starts
// the fork's services again, fresh, once the copies have ended
// (restartHeirs), as a fork forked with --live=rerun would have them; so
// does finding that run's supervisor dead, killed or crashed (reviveHeirs).

// Adopted is a process a fork received by live fork: it runs in the
// fork's namespaces and cgroup, but its parent is outside the fork's
// supervisor, which therefore does not list it.
type Adopted struct {
	Service string `json:"service,omitempty"`
	Pid     int    `json:"pid"` // host pid
	Start   string `json:"start"`
	Origin  int    `json:"origin"`               // the parent's process it was forked from
	Run     string `json:"origin_run,omitempty"` // the run it was forked from (empty in files written before it was recorded: the fork's parent)
	// Confinement is the fork's confinement the copy was given on top of
	// its origin's (nil: none, the fork's [confine] is off).
	Confinement *confine.Applied `json:"confinement,omitempty"`
}

// alive reports whether the copy runs on (not ended, not a zombie).
func (a Adopted) alive() bool { return procfs.Alive("", a.Pid, a.Start) }

func (m *Manager) adoptedPath(r engine.Ref) string {
	return m.lay.Run(r.Workspace.ID, r.Run.ID).Adopted()
}

// writeAdopted records a as r's live-forked processes; none removes the
// record.
func (m *Manager) writeAdopted(r engine.Ref, a []Adopted) error {
	if len(a) == 0 {
		if err := os.Remove(m.adoptedPath(r)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	return atomicfile.Write(m.adoptedPath(r), b, 0o644)
}

// readAdopted lists every process recorded as forked live into r, ended
// or not.
func (m *Manager) readAdopted(r engine.Ref) []Adopted {
	b, err := os.ReadFile(m.adoptedPath(r))
	if err != nil {
		return nil
	}
	var all []Adopted
	if json.Unmarshal(b, &all) != nil {
		return nil
	}
	return all
}

// adopted lists r's live-forked processes that still run.
func (m *Manager) adopted(r engine.Ref) []Adopted {
	var out []Adopted
	for _, a := range m.readAdopted(r) {
		if a.alive() {
			out = append(out, a)
		}
	}
	return out
}

// heir is a running fork holding copies of a run's processes.
type heir struct {
	ref    engine.Ref
	copies []Adopted
}

// heirs lists the running forks of r's workspace that hold processes
// forked live from r.
func (m *Manager) heirs(ctx context.Context, r engine.Ref) []heir {
	var runs []*tine.Run
	if err := m.eng.Store().View(ctx, func(tx tine.Tx) (err error) {
		runs, err = tx.Runs(tine.RunFilter{Workspace: r.Workspace.ID})
		return err
	}); err != nil {
		m.warn("finding the forks holding %s's processes: %v", r.Run.Name, err)
		return nil
	}
	originNS := pidNS(m.supervised(r)) // "" when r does not run
	var out []heir
	for _, f := range runs {
		if f.ID == r.Run.ID || !f.Active() {
			continue
		}
		h := heir{ref: engine.Ref{Workspace: r.Workspace, Run: f}}
		for _, a := range m.readAdopted(h.ref) {
			if a.Run != r.Run.ID && (a.Run != "" || f.Parent != r.Run.ID) {
				continue
			}
			if a.alive() && pidNS(a.Pid) != originNS {
				continue // a copy outside r's pid namespace does not end with it
			}
			h.copies = append(h.copies, a)
		}
		if len(h.copies) > 0 && m.supervised(h.ref) > 0 {
			out = append(out, h)
		}
	}
	return out
}

// pidNS names pid's pid namespace, or is "" for no process.
func pidNS(pid int) string {
	if pid <= 0 {
		return ""
	}
	ns, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	return ns
}

// copiesEnd is how long restartHeirs waits for copies to end once their
// origin's supervisor is gone (the kernel ends them with its pid
// namespace).
const copiesEnd = 5 * time.Second

// restartHeirs, after origin stopped, starts again in each heir the
// services whose copies ended with it, records that on the heir, and drops
// the ended copies from its adopted.json. It returns the names of the
// heirs it restarted.
func (m *Manager) restartHeirs(ctx context.Context, origin engine.Ref, heirs []heir) []string {
	restarted := make([]bool, len(heirs))
	var wg sync.WaitGroup
	for i, h := range heirs {
		wg.Go(func() {
			restarted[i] = m.restartHeir(ctx, origin, h)
		})
	}
	wg.Wait()
	var names []string
	for i, h := range heirs {
		if restarted[i] {
			names = append(names, h.ref.Run.Name)
		}
	}
	return names
}

// reviveHeirs is restartHeirs for a run whose supervisor died on its own
// (killed, crashed: no tine stop restarted its heirs), once something
// finds it dead: tine gc, or tine start recovering it. Its heirs' copies
// ended with its pid namespace; those already restarted are no longer in
// their adopted.json, so a second call restarts nothing.
func (m *Manager) reviveHeirs(ctx context.Context, dead engine.Ref) []string {
	return m.restartHeirs(ctx, dead, m.heirs(ctx, dead))
}

func (m *Manager) restartHeir(ctx context.Context, origin engine.Ref, h heir) bool {
	ended := endedCopies(h.copies)
	if len(ended) == 0 {
		return false
	}
	var keep []Adopted
	for _, a := range m.readAdopted(h.ref) {
		if !ended[a.Pid] {
			keep = append(keep, a)
		}
	}
	if err := m.writeAdopted(h.ref, keep); err != nil {
		m.warn("updating %s's live-forked processes: %v", h.ref.Run.Name, err)
	}
	services, pids := []string{}, []int{}
	for _, a := range h.copies {
		if ended[a.Pid] {
			pids = append(pids, a.Pid)
			if a.Service != "" {
				services = append(services, a.Service)
			}
		}
	}
	m.forgetChoices(h.ref, services)
	detail := map[string]any{"origin": origin.Run.ID, "services": services, "pids": pids}
	// NoWait: stopping a run is not held up by its forks' ready checks.
	if _, err := m.start(ctx, h.ref, StartOptions{Services: true, NoWait: true}); err != nil {
		detail["error"] = err.Error()
		m.warn("restarting %s's services, whose live-forked copies ended with %s: %v", h.ref.Run.Name, origin.Run.Name, err)
	}
	if err := m.eng.Store().Update(ctx, func(tx tine.Tx) error {
		return tx.AppendEvent(tine.NewEvent(time.Now(), h.ref.Workspace.ID, h.ref.Run.ID, tine.EventRestart, detail))
	}); err != nil {
		m.warn("recording %s's restart: %v", h.ref.Run.Name, err)
	}
	return true
}

// endedCopies waits up to copiesEnd for copies to end and returns the pids
// of those that did; a copy running on keeps its service from being
// started twice.
func endedCopies(copies []Adopted) map[int]bool {
	deadline := time.Now().Add(copiesEnd)
	for {
		ended := map[int]bool{}
		for _, a := range copies {
			if !a.alive() {
				ended[a.Pid] = true
			}
		}
		if len(ended) == len(copies) || time.Now().After(deadline) {
			return ended
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ReviveCopies starts again, in every running fork, the services whose
// live-forked copies have ended (the kernel ends a copy with its origin's
// pid namespace: the origin was stopped, killed or crashed), and records
// restart on each, as tine stop does for its own heirs: for an origin
// nothing stopped, this is what notices. It returns the forks restarted.
func (m *Manager) ReviveCopies(ctx context.Context) []string {
	var names []string
	for _, f := range m.activeForks(ctx) {
		if m.reviveEnded(ctx, f) {
			names = append(names, f.Run.Name)
		}
	}
	return names
}

// activeForks returns every active fork of every workspace, in two queries
// whatever the number of workspaces: the daemon's watchers ask every few
// seconds, and find nothing to do nearly always.
func (m *Manager) activeForks(ctx context.Context) []engine.Ref {
	var forks []engine.Ref
	m.eng.Store().View(ctx, func(tx tine.Tx) error {
		ws, err := tx.Workspaces()
		if err != nil {
			return err
		}
		byID := make(map[string]*tine.Workspace, len(ws))
		for _, w := range ws {
			byID[w.ID] = w
		}
		runs, err := tx.Runs(tine.RunFilter{})
		for _, r := range runs {
			if w := byID[r.Workspace]; w != nil && r.Role == tine.RoleFork && r.Active() {
				forks = append(forks, engine.Ref{Workspace: w, Run: r})
			}
		}
		return err
	})
	return forks
}

// reviveEnded restarts fork f's services whose copies ended, under f's
// lock; it reports whether it did.
func (m *Manager) reviveEnded(ctx context.Context, f engine.Ref) bool {
	if len(endedOf(m.readAdopted(f))) == 0 || m.supervised(f) == 0 {
		return false // the common case: no lock taken
	}
	f, unlock, err := m.eng.LockRun(ctx, f.Run.ID)
	if err != nil {
		return false
	}
	defer unlock()
	ended := endedOf(m.readAdopted(f))
	if len(ended) == 0 || m.supervised(f) == 0 {
		return false
	}
	origin := ended[0].Run
	if origin == "" {
		origin = f.Run.Parent
	}
	return m.restartHeir(ctx, engine.Ref{Workspace: f.Workspace, Run: &tine.Run{ID: origin}}, heir{ref: f, copies: ended})
}

func endedOf(copies []Adopted) []Adopted {
	var out []Adopted
	for _, a := range copies {
		if !a.alive() {
			out = append(out, a)
		}
	}
	return out
}

// WatchCopies runs ReviveCopies every interval until ctx ends; tine serve
// runs it, so a fork's services come back within interval of their
// origin's end, however it ended.
func (m *Manager) WatchCopies(ctx context.Context, every time.Duration, warn func(format string, args ...any)) {
	tick.Every(ctx, every, func() {
		if names := m.ReviveCopies(ctx); len(names) > 0 && warn != nil {
			warn("started the services of %s again: their live-forked copies ended with their origin", strings.Join(names, ", "))
		}
	})
}
