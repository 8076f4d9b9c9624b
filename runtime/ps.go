package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/flock"
	"github.com/tinehq/tine/internal/procfs"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/cgroup"
	"github.com/tinehq/tine/confine"
	"github.com/tinehq/tine/egress"
	"github.com/tinehq/tine/netns"
	"github.com/tinehq/tine/supervisor"
)

// Process is one process of a run, as tine ps shows it.
type Process struct {
	Pid      int    `json:"pid"`    // on the host
	NSPid    int    `json:"ns_pid"` // inside the run's pid namespace (0: outside it, e.g. forked live)
	PPid     int    `json:"ppid"`
	Service  string `json:"service,omitempty"`
	RSSBytes int64  `json:"rss_bytes"`
	State    string `json:"state"`
	Command  string `json:"command"`
}

// PS is the state of a run's processes.
type PS struct {
	Run        *tine.Run `json:"run"`
	State      string    `json:"state"` // running, stopped or dead
	Supervisor int       `json:"supervisor,omitempty"`
	Addr       string    `json:"addr,omitempty"`
	// Egress is the outbound policy the run's supervisor enforces (nil:
	// its network is open) and Refused what it refused so far.
	Egress  *egress.Policy  `json:"egress,omitempty"`
	Refused []egress.Record `json:"refused,omitempty"`
	// HostPorts are the ports of the host's loopback the run reaches at
	// its own 127.0.0.1 ([network] host_ports and its agents' APIs).
	HostPorts []int `json:"host_ports,omitempty"`
	// Confinement is what the run's supervisor confines its processes by.
	Confinement *confine.Applied           `json:"confinement,omitempty"`
	Services    []supervisor.ServiceStatus `json:"services,omitempty"`
	Ports       []supervisor.Port          `json:"ports,omitempty"`
	Adopted     []Adopted                  `json:"forked_live,omitempty"` // processes received by live fork
	// Live says how the live fork that made the run carried each of its
	// parent's services: by which engine and why, or restarted and why.
	Live []engine.LiveChoice `json:"live,omitempty"`
	// DisplayIdle, while the run's display is stopped for being idle,
	// says when and after how long.
	DisplayIdle *IdleDisplay  `json:"display_idle,omitempty"`
	Processes   []Process     `json:"processes"`
	Stats       *cgroup.Stats `json:"stats,omitempty"`
}

// PS reports run ref's supervisor, services, ports, processes and
// resource use.
func (m *Manager) PS(ctx context.Context, ref string) (*PS, error) {
	r, err := m.eng.FindRun(ctx, ref)
	if err != nil {
		return nil, err
	}
	st, pid := m.ProcState(r)
	var sandboxed []int // commands of tine exec's sandbox: no supervisor, no cgroup
	if pid == 0 {
		if sandboxed = m.Sessions(r); len(sandboxed) == 0 {
			supervisor.ForgetRecords(m.supDir(r)) // what a killed tine exec left, not a command running
		}
	}
	out := &PS{Run: r.Run, State: st, Supervisor: pid, Addr: r.Run.Addr, Processes: []Process{}}
	out.Egress, out.Refused = m.egressState(r)
	out.Confinement = readConfinement(m.supDir(r))
	if pid == 0 {
		for _, p := range sandboxed {
			out.Processes = append(out.Processes, readProcess(p))
		}
		if b, err := os.ReadFile(supervisor.HostPortsPath(m.supDir(r))); err == nil {
			json.Unmarshal(b, &out.HostPorts)
		}
		return out, nil
	}
	if s, err := supervisor.NewClient(m.supDir(r)).Status(ctx); err == nil {
		out.Services, out.Ports, out.HostPorts = s.Services, s.Ports, s.HostPorts
	}
	out.Adopted = m.adopted(r)
	out.Live = m.readChoices(r)
	out.DisplayIdle = m.IdleDisplayOf(r)
	if cg, err := cgroup.Load(r.Run.ID); err == nil {
		pids, _ := cg.Procs()
		out.Processes = processes(pids, out.Services)
		for i := range out.Processes {
			for _, a := range out.Adopted {
				if a.Pid == out.Processes[i].Pid {
					out.Processes[i].Service, out.Processes[i].NSPid = a.Service, 0
				}
			}
		}
		if s, err := cg.Stats(); err == nil {
			out.Stats = &s
		}
	}
	return out, nil
}

// processes describes pids, naming the service each belongs to (its
// process group is the service's).
func processes(pids []int, svcs []supervisor.ServiceStatus) []Process {
	byNS := map[int]string{}
	for _, s := range svcs {
		if s.Pid > 0 {
			byNS[s.Pid] = s.Name
		}
	}
	out := make([]Process, 0, len(pids))
	svcHost := map[int]string{} // host pid of a service's leader → name
	for _, pid := range pids {
		p := readProcess(pid)
		if name, ok := byNS[p.NSPid]; ok && p.NSPid > 0 {
			svcHost[pid] = name
		}
		out = append(out, p)
	}
	for i := range out {
		out[i].Service = svcHost[pgid(out[i].Pid)]
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pid < out[j].Pid })
	return out
}

func readProcess(pid int) Process {
	p := Process{Pid: pid}
	dir := "/proc/" + strconv.Itoa(pid)
	b, _ := os.ReadFile(dir + "/status")
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		switch k {
		case "NSpid":
			if len(f) > 1 {
				p.NSPid, _ = strconv.Atoi(f[len(f)-1])
			}
		case "PPid":
			p.PPid, _ = strconv.Atoi(f[0])
		case "State":
			p.State = f[0]
		case "VmRSS":
			kb, _ := strconv.ParseInt(f[0], 10, 64)
			p.RSSBytes = kb << 10
		}
	}
	cmd, _ := os.ReadFile(dir + "/cmdline")
	p.Command = strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))
	return p
}

func pgid(pid int) int {
	st, err := procfs.Read("", pid)
	if err != nil {
		return 0
	}
	return st.PGrp
}

// Publish makes port of run ref reachable on the host at hostAddr (for
// example "127.0.0.1:8080"; port 0 picks a free one) and returns the
// address it listens on. The run's supervisor forwards connections until
// it stops.
func (m *Manager) Publish(ctx context.Context, ref string, port int, hostAddr string) (string, error) {
	if port < 1 || port > 65535 {
		return "", fmt.Errorf("port %d: use 1 to 65535: %w", port, tine.ErrInvalid)
	}
	r, err := m.eng.FindRun(ctx, ref)
	if err != nil {
		return "", err
	}
	if m.supervised(r) == 0 {
		return "", fmt.Errorf("%s is not running (tine start %s): %w", r.Run.Name, r.Run.Name, tine.ErrState)
	}
	ln, err := net.Listen("tcp", hostAddr)
	if err != nil {
		return "", fmt.Errorf("listening on %s: %w", hostAddr, err)
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		return "", err
	}
	defer f.Close()
	addr := ln.Addr().String()
	if err := supervisor.NewClient(m.supDir(r)).Publish(ctx, port, addr, f); err != nil {
		return "", err
	}
	return addr, m.eng.Store().Update(ctx, func(tx tine.Tx) error {
		return tx.AppendEvent(tine.NewEvent(time.Now(), r.Workspace.ID, r.Run.ID, tine.EventPublish, map[string]any{"port": port, "host": addr}))
	})
}

// GCResult lists what GC removed.
type GCResult struct {
	Cgroups     []string `json:"cgroups"`
	Links       []string `json:"links"`
	Supervisors []string `json:"supervisors"` // runs whose dead supervisor's files were removed
	Locks       []string `json:"locks"`       // workspaces gone whose lock files were removed
	Restarted   []string `json:"restarted"`   // forks whose services were started again, their live-forked copies having ended with a dead supervisor
}

// GC removes what dead supervisors left: cgroups and network links of this
// state directory's runs that have no live supervisor, empty cgroups of
// runs nobody here knows once they are older than gcFresh, stale pid files
// and sockets; and the lock files of workspaces that are gone. A fork that
// held copies of a dead supervisor's processes (they ended with it) has its
// services started again (reviveHeirs). Another state directory's live
// runs are never touched, nor a run whose supervisor is being launched:
// each workspace is cleaned holding its lock, which every start holds.
// Runs recorded as running whose supervisor died stay reported dead until
// tine start or tine stop.
func (m *Manager) GC(ctx context.Context) (*GCResult, error) {
	res := &GCResult{Cgroups: []string{}, Links: []string{}, Supervisors: []string{}, Locks: []string{}, Restarted: []string{}}
	var wss []*tine.Workspace
	if err := m.eng.Store().View(ctx, func(tx tine.Tx) (err error) {
		wss, err = tx.Workspaces()
		return err
	}); err != nil {
		return nil, err
	}
	known := map[string]bool{} // ids of this state directory's runs
	links, _ := netns.Links(m.net)
	for _, w := range wss {
		if err := m.gcWorkspace(ctx, w, links, known, res); err != nil {
			return nil, err
		}
	}
	gcUnknown(ctx, known, res)
	if err := m.gcLocks(ctx, res); err != nil {
		return nil, err
	}
	return res, nil
}

// gcLocks removes the lock files of workspaces that are gone: no record
// and no directory. A release removes its workspace's, but a command that
// waited for the workspace meanwhile (GC's own gcWorkspace among them)
// makes it again. A lock somebody holds is kept, and one taken while it is
// removed is taken again on a file made anew (flock.Remove).
func (m *Manager) gcLocks(ctx context.Context, res *GCResult) error {
	ents, err := os.ReadDir(m.lay.Workspaces())
	if err != nil {
		return err
	}
	for _, ent := range ents {
		ws, ok := strings.CutSuffix(ent.Name(), ".lock")
		if !ok || !ent.Type().IsRegular() || !tine.LooksLikeID(tine.PrefixWorkspace, ws) {
			continue
		}
		if _, err := os.Lstat(m.lay.Workspace(ws).Dir()); !errors.Is(err, fs.ErrNotExist) {
			continue // a workspace, or what the sweeper sets aside under its lock
		}
		err := m.eng.Store().View(ctx, func(tx tine.Tx) error { _, err := tx.Workspace(ws); return err })
		if !errors.Is(err, tine.ErrNotFound) {
			continue
		}
		if flock.Remove(m.lay.Workspace(ws).Lock()) {
			res.Locks = append(res.Locks, ws)
		}
	}
	return nil
}

// gcWorkspace removes the supervisor files, cgroups and links that the
// dead supervisors of workspace w's runs left, holding w's lock.
func (m *Manager) gcWorkspace(ctx context.Context, w *tine.Workspace, links []string, known map[string]bool, res *GCResult) error {
	unlock, err := m.eng.LockWorkspace(w.ID)
	if err != nil {
		return err
	}
	defer unlock()
	var runs []*tine.Run
	if err := m.eng.Store().View(ctx, func(tx tine.Tx) (err error) {
		runs, err = tx.Runs(tine.RunFilter{Workspace: w.ID})
		return err
	}); err != nil {
		return err
	}
	for _, run := range runs {
		r := engine.Ref{Workspace: w, Run: run}
		known[run.ID] = true
		_, alive, recorded := supervisor.Pid(m.supDir(r))
		if alive {
			continue
		}
		if recorded {
			supervisor.Forget(m.supDir(r))
			res.Supervisors = append(res.Supervisors, run.Name)
		}
		m.forgetSandbox(r)
		if recorded || run.Proc == tine.ProcRunning { // its supervisor died
			res.Restarted = append(res.Restarted, m.reviveHeirs(ctx, r)...)
		}
		if cg, err := cgroup.Load(run.ID); err == nil && removeGroup(ctx, cg) {
			res.Cgroups = append(res.Cgroups, run.ID)
		}
		// The kernel removes a veth when its namespace ends: a link left is
		// one whose namespace something else still holds.
		if l := netns.HostName(run.ID); slices.Contains(links, l) && netns.Detach(run.ID) == nil {
			res.Links = append(res.Links, l)
		}
	}
	return nil
}

// gcFresh is how long a cgroup may be empty before GC takes it for
// abandoned: another state directory's run's group is empty while its
// supervisor is being launched into it.
const gcFresh = 30 * time.Second

// gcUnknown removes the empty cgroups, older than gcFresh, of runs that
// are not known here.
func gcUnknown(ctx context.Context, known map[string]bool, res *GCResult) {
	names, err := cgroup.List()
	if err != nil {
		return
	}
	for _, n := range names {
		if known[n] || !tine.LooksLikeID(tine.PrefixRun, n) {
			continue
		}
		cg, err := cgroup.Load(n)
		if err != nil {
			continue
		}
		if pids, err := cg.Procs(); err != nil || len(pids) > 0 {
			continue // another state directory's live run
		}
		if made, err := cg.Created(); err != nil || time.Since(made) < gcFresh {
			continue // maybe being launched into
		}
		if removeGroup(ctx, cg) {
			res.Cgroups = append(res.Cgroups, n)
		}
	}
}

func removeGroup(ctx context.Context, cg *cgroup.Group) bool {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return cg.Remove(ctx) == nil
}
