package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/cgroup"
	"github.com/tinehq/tine/confine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/atomicfile"
	"github.com/tinehq/tine/livefork"
	"github.com/tinehq/tine/supervisor"
)

// candidate is a process of the parent that a live fork may carry: the
// main process of a service (what its shell wrapper runs), or a lone
// process a tine exec started.
type candidate struct {
	Service string // "" for a tine exec process
	Pid     int    // host pid
	Refused string // why it cannot be forked live, or ""
	Engine  string // how it is carried (choose): engine.LivePtrace or engine.LiveCRIU
	Why     string // why that engine
}

// liveForks carries the parent's processes into the forks, each by the
// engine chosen for it (choose): ptrace makes a process fork itself into
// each fork, CRIU checkpoints a service's whole tree once and restores it
// into every fork. Services neither carries, or whose live fork fails,
// are started fresh instead, the report saying why.
func (m *Manager) liveForks(ctx context.Context, p engine.Ref, forks []*tine.Run, mode string, noWait bool) []engine.LiveReport {
	if mode == engine.LiveCRIU {
		if err := livefork.CRIUProbe(ctx); err != nil {
			return m.rerunAll(ctx, p, forks, map[string]string{"criu": err.Error()}, noWait)
		}
	}
	if why := m.deniesSetns(p); why != "" && mode == engine.LivePtrace {
		return m.rerunAll(ctx, p, forks, map[string]string{"(all)": why}, noWait)
	}
	cands, err := m.candidates(ctx, p)
	if err != nil {
		return m.rerunAll(ctx, p, forks, map[string]string{"(all)": err.Error()}, noWait)
	}
	cands = m.choose(ctx, p, cands, mode)
	reports := make([]engine.LiveReport, len(forks))
	launched := m.launchForks(ctx, p, forks, reports)
	results := m.injectAll(ctx, p, launched, byEngine(cands, engine.LivePtrace))
	for id, got := range m.restoreAll(ctx, p, launched, byEngine(cands, engine.LiveCRIU)) {
		if results[id] == nil {
			results[id] = map[int]liveOutcome{}
		}
		maps.Copy(results[id], got)
	}
	for i, f := range forks {
		reports[i].Mode = mode
		if !reports[i].Started {
			continue
		}
		m.finishLive(ctx, p, engine.Ref{Workspace: p.Workspace, Run: f}, &reports[i], cands, results[f.ID], noWait)
	}
	return reports
}

// deniesSetns says why p's processes cannot be forked live by ptrace when
// their seccomp filter denies setns (p is a fork: the copy could not join
// the new fork's namespaces), or is "".
func (m *Manager) deniesSetns(p engine.Ref) string {
	if a := readConfinement(m.supDir(p)); a == nil || !a.DenyMounts {
		return ""
	}
	return fmt.Sprintf("%s is a fork, whose seccomp filter denies setns, which a ptrace live fork's copy needs to join the new fork's namespaces; its services were started fresh instead (--live=rerun)", p.Run.Name)
}

// candidates lists the parent's processes a live fork considers, with the
// reason each that cannot be forked is refused.
func (m *Manager) candidates(ctx context.Context, p engine.Ref) ([]candidate, error) {
	if m.supervised(p) == 0 {
		return nil, fmt.Errorf("%s is not running: %w", p.Run.Name, tine.ErrState)
	}
	st, err := supervisor.NewClient(m.supDir(p)).Status(ctx)
	if err != nil {
		return nil, err
	}
	procs := processes(m.cgroupProcs(p), st.Services)
	var out []candidate
	seen := map[int]bool{}
	for _, s := range st.Services {
		if s.Pid == 0 {
			continue
		}
		leader := hostPid(procs, s.Pid)
		c := candidate{Service: s.Name, Pid: mainProcess(procs, leader)}
		c.Refused = refusal(c.Pid)
		markTree(procs, leader, seen)
		out = append(out, c)
	}
	for _, pr := range procs {
		if seen[pr.Pid] || pr.NSPid == 1 || hasChild(procs, pr.Pid) {
			continue
		}
		out = append(out, candidate{Pid: pr.Pid, Refused: refusal(pr.Pid)})
	}
	return out, nil
}

func refusal(pid int) string {
	if pid == 0 {
		return "not running"
	}
	if err := livefork.Check(pid); err != nil {
		var re *livefork.RefusedError
		if errors.As(err, &re) {
			return strings.Join(re.Reasons, "; ")
		}
		return err.Error()
	}
	return ""
}

func hostPid(procs []Process, nsPid int) int {
	for _, p := range procs {
		if p.NSPid == nsPid {
			return p.Pid
		}
	}
	return 0
}

// mainProcess follows a service's leader down through shells that wait on
// exactly one child: `sh -c "python3 app.py"` is carried as the python.
func mainProcess(procs []Process, pid int) int {
	for pid != 0 && isShell(pid) {
		var kids []int
		for _, p := range procs {
			if p.PPid == pid {
				kids = append(kids, p.Pid)
			}
		}
		if len(kids) != 1 {
			return pid
		}
		pid = kids[0]
	}
	return pid
}

func markTree(procs []Process, pid int, seen map[int]bool) {
	seen[pid] = true
	for _, p := range procs {
		if p.PPid == pid && !seen[p.Pid] {
			markTree(procs, p.Pid, seen)
		}
	}
}

func hasChild(procs []Process, pid int) bool {
	for _, p := range procs {
		if p.PPid == pid {
			return true
		}
	}
	return false
}

// byEngine are the candidates carried by engine eng.
func byEngine(cands []candidate, eng string) []candidate {
	var out []candidate
	for _, c := range cands {
		if c.Refused == "" && c.Engine == eng {
			out = append(out, c)
		}
	}
	return out
}

// launched is a fork whose supervisor is up, ready to receive processes.
type launched struct {
	ref engine.Ref
	pid int
}

// launchForks starts each fork's supervisor without services.
func (m *Manager) launchForks(ctx context.Context, p engine.Ref, forks []*tine.Run, reports []engine.LiveReport) []launched {
	out := make([]launched, len(forks))
	var wg sync.WaitGroup
	for i, f := range forks {
		wg.Go(func() {
			r := engine.Ref{Workspace: p.Workspace, Run: f}
			reports[i] = engine.LiveReport{Run: f.Name, Mode: engine.LivePtrace}
			res, err := m.start(ctx, r, StartOptions{})
			if err != nil {
				reports[i].Error = err.Error()
				return
			}
			reports[i].Started, reports[i].Addr = true, f.Addr
			out[i] = launched{ref: r, pid: res.Pid}
		})
	}
	wg.Wait()
	return out
}

// injectAll freezes the parent, seizes every eligible process, thaws it,
// and forks each process into each launched fork. It returns, per fork,
// the outcome of each candidate.
func (m *Manager) injectAll(ctx context.Context, p engine.Ref, forks []launched, live []candidate) map[string]map[int]liveOutcome {
	out := map[string]map[int]liveOutcome{}
	if len(live) == 0 {
		return out
	}
	pids := make([]int, len(live))
	for i, c := range live {
		pids[i] = c.Pid
	}
	thaw, err := m.freeze(ctx, p)
	if err != nil {
		return failAll(forks, live, err)
	}
	s, err := livefork.Seize(pids)
	thaw()
	if err != nil {
		return failAll(forks, live, err)
	}
	defer s.Close()
	for _, f := range forks {
		if f.pid == 0 {
			continue
		}
		out[f.ref.Run.ID] = m.injectInto(s, p, f, live)
	}
	return out
}

// injectInto forks each of live into fork f. The fork's mount namespace
// (its supervisor's namespaces) is exposed in the parent's run (which does not see the host's /proc)
// for that time only.
func (m *Manager) injectInto(s *livefork.Session, p engine.Ref, f launched, live []candidate) map[int]liveOutcome {
	out := map[int]liveOutcome{}
	nsDir, remove, err := supervisor.ExposeNamespaces(m.supDir(p), m.supervised(p), f.pid)
	if err != nil {
		for _, c := range live {
			out[c.Pid] = liveOutcome{err: err}
		}
		return out
	}
	defer remove()
	plan, err := m.copyConfinement(f.ref)
	base := m.target(filepath.Join(nsDir, "mnt"), p, f)
	base.Confine = plan
	for _, c := range live {
		if err != nil {
			out[c.Pid] = liveOutcome{err: err}
			continue
		}
		t := base
		t.Stdout = filepath.Join(m.LogDir(f.ref), logName(c)+".log")
		t.Stderr = t.Stdout
		res, err := s.Fork(c.Pid, t)
		out[c.Pid] = liveOutcome{res: res, err: err, confined: plan}
	}
	return out
}

// copyConfinement is how a copy forked live into fork r is confined: as
// r's supervisor confines every process it starts (the confinement it
// recorded, so the copy gets the very rules r's own processes got), on top
// of the origin's. nil when r confines nothing ([confine] off).
func (m *Manager) copyConfinement(r engine.Ref) (*confine.Plan, error) {
	a := readConfinement(m.supDir(r))
	if a == nil {
		return nil, fmt.Errorf("%s's supervisor recorded no confinement for its processes", r.Run.Name)
	}
	s := a.Spec()
	if len(s.Writable) == 0 && !s.Seccomp {
		return nil, nil
	}
	plan, err := confine.PlanFor(s)
	if err != nil {
		return nil, fmt.Errorf("confinement of %s: %w", r.Run.Name, err)
	}
	return &plan, nil
}

type liveOutcome struct {
	res      livefork.Result
	err      error
	confined *confine.Plan // what the copy was confined by (nil: nothing more than its origin)
	engine   string        // engine.LiveCRIU for a tree restored by CRIU; "" for ptrace
	took     time.Duration // CRIU: checkpoint and restore, start to end
}

func failAll(forks []launched, live []candidate, err error) map[string]map[int]liveOutcome {
	out := map[string]map[int]liveOutcome{}
	for _, f := range forks {
		out[f.ref.Run.ID] = map[int]liveOutcome{}
		for _, c := range live {
			out[f.ref.Run.ID][c.Pid] = liveOutcome{err: err}
		}
	}
	return out
}

// target says where the copies go in fork f: mountNS is the fork's mount
// namespace as the parent's run sees it (ExposeNamespaces); the network
// namespace is opened after joining it, as the fork's own. It is the same
// for every copy but their logs (logName).
func (m *Manager) target(mountNS string, p engine.Ref, f launched) livefork.Target {
	t := livefork.Target{MountNS: mountNS, Workspace: p.Workspace.Path}
	if f.ref.Run.Addr != "" && m.isolated(f.ref) {
		t.NetNS = supervisor.OwnNamespace("net")
	}
	if cg, err := cgroup.Load(f.ref.Run.ID); err == nil {
		t.CgroupProcs = cg.ProcsFiles()
	}
	return t
}

// logName names the log of candidate c's copy: its service's, or
// exec-<pid> for a tine exec process.
func logName(c candidate) string {
	if c.Service == "" {
		return fmt.Sprintf("exec-%d", c.Pid)
	}
	return c.Service
}

// isolated reports whether r's supervisor has a network namespace of its own.
func (m *Manager) isolated(r engine.Ref) bool {
	pid := m.supervised(r)
	if pid == 0 {
		return false
	}
	mine, err1 := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
	host, err2 := os.Readlink("/proc/self/ns/net")
	return err1 == nil && err2 == nil && mine != host
}

// finishLive records what was carried from p into fork r, then starts the
// services that were not.
func (m *Manager) finishLive(ctx context.Context, p, r engine.Ref, rep *engine.LiveReport, cands []candidate, got map[int]liveOutcome, noWait bool) {
	skip := map[string]bool{}
	rep.Refused = map[string]string{}
	var adopted []Adopted
	for _, c := range cands {
		label := procLabel(c)
		o, tried := got[c.Pid]
		switch {
		case c.Refused != "":
			rep.Refused[label] = c.Refused
			rep.Choices = appendRestarted(rep.Choices, c, c.Refused)
		case tried && o.err == nil && o.res.Child > 0:
			lp := liveProcess(c, o)
			rep.Forked = append(rep.Forked, lp)
			if c.Service != "" {
				rep.Choices = append(rep.Choices, engine.LiveChoice{Service: c.Service, Engine: lp.Engine, Why: lp.Why, PauseMS: lp.PauseMS, TookMS: lp.TookMS})
			}
			a := Adopted{Service: c.Service, Pid: o.res.Child, Start: supervisor.StartTime(o.res.Child), Origin: c.Pid, Run: p.Run.ID}
			if o.confined != nil {
				a.Confinement = &o.confined.Applied
			}
			adopted = append(adopted, a)
			if c.Service != "" {
				skip[c.Service] = true
			}
		case tried:
			why := fmt.Sprintf("live fork failed: %v", o.err)
			rep.Refused[label] = why
			rep.Choices = appendRestarted(rep.Choices, c, why)
		}
	}
	if len(rep.Refused) == 0 {
		rep.Refused = nil
	}
	if err := errors.Join(m.writeAdopted(r, adopted), m.writeChoices(r, rep.Choices)); err != nil {
		rep.Error = err.Error()
	}
	res, err := m.start(ctx, r, StartOptions{Services: true, Skip: skip, NoWait: noWait})
	if res != nil {
		rep.Services = res.Services
		for _, s := range res.Services {
			if !skip[s.Name] {
				rep.Restarted = append(rep.Restarted, s.Name)
			}
		}
	}
	if err != nil {
		rep.Error = err.Error()
	}
}

// liveProcess reports candidate c carried into a fork as o says.
func liveProcess(c candidate, o liveOutcome) engine.LiveProcess {
	lp := engine.LiveProcess{Service: c.Service, Pid: c.Pid, Child: o.res.Child, Engine: o.engine,
		PauseMS: float64(o.res.Pause.Microseconds()) / 1000, Why: c.Why}
	if lp.Engine == "" {
		lp.Engine = engine.LivePtrace
	}
	if o.took > 0 {
		lp.TookMS = float64(o.took.Microseconds()) / 1000
	}
	return lp
}

// appendRestarted records that service c was restarted, and why; a tine
// exec process is not a service, and is not recorded.
func appendRestarted(choices []engine.LiveChoice, c candidate, why string) []engine.LiveChoice {
	if c.Service == "" {
		return choices
	}
	return append(choices, engine.LiveChoice{Service: c.Service, Engine: engine.LiveRerun, Why: why})
}

// writeChoices records how r's services reached it (tine ps shows it).
func (m *Manager) writeChoices(r engine.Ref, choices []engine.LiveChoice) error {
	b, err := json.Marshal(choices)
	if err != nil {
		return err
	}
	return atomicfile.Write(m.lay.Run(r.Workspace.ID, r.Run.ID).LiveChoices(), b, 0o644)
}

// forgetChoices drops from r's record the services started again fresh
// (their live copies ended with their origin).
func (m *Manager) forgetChoices(r engine.Ref, services []string) {
	all := m.readChoices(r)
	keep := slices.DeleteFunc(slices.Clone(all), func(c engine.LiveChoice) bool { return slices.Contains(services, c.Service) })
	if len(keep) != len(all) {
		if err := m.writeChoices(r, keep); err != nil {
			m.warn("updating %s's live fork record: %v", r.Run.Name, err)
		}
	}
}

// readChoices is what writeChoices recorded for r, or nil.
func (m *Manager) readChoices(r engine.Ref) []engine.LiveChoice {
	b, err := os.ReadFile(m.lay.Run(r.Workspace.ID, r.Run.ID).LiveChoices())
	if err != nil {
		return nil
	}
	var out []engine.LiveChoice
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

func procLabel(c candidate) string {
	if c.Service != "" {
		return fmt.Sprintf("%s (pid %d)", c.Service, c.Pid)
	}
	return fmt.Sprintf("pid %d", c.Pid)
}

// isShell reports whether pid runs a POSIX shell, which a service's
// command line is run by.
func isShell(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return false
	}
	switch strings.TrimSpace(string(b)) {
	case "sh", "dash", "bash", "ash", "zsh":
		return true
	}
	return false
}
