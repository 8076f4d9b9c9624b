package runtime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/cgroup"
	"github.com/tinehq/tine/config"
	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/desktop"
	"github.com/tinehq/tine/egress"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/runenv"
	"github.com/tinehq/tine/netns"
	"github.com/tinehq/tine/supervisor"
)

// A live run has a supervisor: the first process of its namespaces, in
// its own cgroup, optionally with a network namespace on the tine bridge.
// The store records what tine last made of a run's processes (Run.Proc);
// whether the supervisor really lives is proved each time (supervisor.Pid:
// its pid file names a process that has not ended, of the recorded start
// time, answering on its socket), so one that died — even one left an
// unreaped zombie, or whose pid was reused — is reported dead, never
// assumed alive.

// Process states as checked, shown by tine ls and tine ps.
const (
	ProcStopped = "stopped"
	ProcRunning = "running"
	ProcDead    = "dead" // recorded running, but its supervisor is gone
)

// LogDir is where run r's service logs are.
func (m *Manager) LogDir(r engine.Ref) string {
	return m.lay.Run(r.Workspace.ID, r.Run.ID).Logs()
}

// ProcState returns the checked state of run r's processes and its
// supervisor's host pid when it is alive.
func (m *Manager) ProcState(r engine.Ref) (string, int) {
	pid, alive, _ := supervisor.Pid(m.supDir(r))
	switch {
	case alive:
		return ProcRunning, pid
	case r.Run.Proc == tine.ProcRunning:
		return ProcDead, 0
	}
	return ProcStopped, 0
}

// supervised returns the pid of run r's supervisor, or 0.
func (m *Manager) supervised(r engine.Ref) int {
	pid, alive, _ := supervisor.Pid(m.supDir(r))
	if !alive {
		return 0
	}
	return pid
}

// StartOptions says what Start brings up.
type StartOptions struct {
	Services bool            // start the services of tine.toml (tine start); else only the supervisor (tine exec)
	Skip     map[string]bool // services not to start (carried live from a parent)
	// NoWait returns once the services' processes run, without waiting for
	// their ready checks: those are then "starting" in the result.
	NoWait bool
	// Display gives the run a display of its own although tine.toml does
	// not ask for one (tine start --display); it keeps it, and its forks
	// get one.
	Display bool
}

// StartResult is what Start did.
type StartResult struct {
	Run        *tine.Run                  `json:"run"`
	Pid        int                        `json:"pid"`      // the supervisor's host pid
	Launched   bool                       `json:"launched"` // false when the supervisor was already up
	Recovered  bool                       `json:"recovered,omitempty"`
	Services   []supervisor.ServiceStatus `json:"services"`
	ServiceErr string                     `json:"service_error,omitempty"`
}

// Start brings run ref up: its supervisor (recovering from one that died)
// and, with o.Services, its declared services. Starting a running run
// starts only the services that are not running. A service that fails is
// reported in the result and the error; the run stays up.
func (m *Manager) Start(ctx context.Context, ref string, o StartOptions) (*StartResult, error) {
	r, unlock, err := m.eng.LockRun(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return m.start(ctx, r, o)
}

func (m *Manager) start(ctx context.Context, r engine.Ref, o StartOptions) (*StartResult, error) {
	if !r.Run.Active() {
		return nil, fmt.Errorf("run %s is %s: %w", r.Run.Name, r.Run.State, tine.ErrState)
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("running a run's processes under a supervisor needs root: %w", tine.ErrPrivilege)
	}
	cfg, err := m.eng.Config(ctx, r)
	if err != nil {
		return nil, err
	}
	display, mark := m.displayOn(r, cfg, o.Display)
	res := &StartResult{Run: r.Run}
	res.Pid = m.supervised(r)
	if res.Pid > 0 && display {
		if err := m.checkDisplay(ctx, r); err != nil {
			return nil, err
		}
	}
	if mark {
		if err := m.markDisplay(r); err != nil {
			return nil, err
		}
	}
	if res.Pid == 0 {
		res.Recovered = r.Run.Proc == tine.ProcRunning
		if res.Recovered {
			m.cleanup(r)
			m.reviveHeirs(ctx, r)
		}
		if res.Pid, err = m.launch(ctx, r, cfg, display); err != nil {
			return nil, err
		}
		res.Launched = true
	}
	if o.Services && (len(cfg.Services) > 0 || display) {
		skip := maps.Clone(o.Skip)
		if skip == nil {
			skip = map[string]bool{}
		}
		for _, a := range m.adopted(r) { // forked live into r: already running
			skip[a.Service] = true
		}
		if display { // before the services, which may draw on it
			if res.Services, err = m.startDisplay(ctx, r, cfg, skip); err != nil {
				res.ServiceErr = err.Error()
				return res, err
			}
		}
		svcs := m.services(r, cfg, skip)
		if len(svcs) == 0 {
			return res, nil // every service is running already (forked live)
		}
		m.parentPids(ctx, r, svcs)
		res.Services, err = supervisor.NewClient(m.supDir(r)).StartServices(ctx, svcs, o.NoWait)
		if err != nil {
			res.ServiceErr = err.Error()
			return res, err
		}
	}
	return res, nil
}

// services maps tine.toml's services to what the supervisor runs.
func (m *Manager) services(r engine.Ref, cfg *config.Config, skip map[string]bool) []supervisor.Service {
	var out []supervisor.Service
	for _, s := range cfg.Services {
		if skip[s.Name] {
			continue
		}
		sv := supervisor.Service{Name: s.Name, Command: s.Command, Dir: filepath.Join(r.Workspace.Path, s.Cwd),
			ReadyPort: s.Ready.Port, ReadyCommand: s.Ready.Command, ReadyTimeout: s.ReadyTimeout(), Restart: s.Restart}
		for k, v := range s.Env {
			sv.Env = append(sv.Env, k+"="+v)
		}
		out = append(out, sv)
	}
	return out
}

// parentPids asks, for each service of fork r's, the pid the service has
// in r's parent while the parent runs (supervisor.Service.Pid): restarted
// from the fork's files, the service finds its own pid in what it wrote
// about itself, not another process's of the fork.
func (m *Manager) parentPids(ctx context.Context, r engine.Ref, svcs []supervisor.Service) {
	if r.Run.Parent == "" {
		return
	}
	parent, err := m.eng.FindRun(ctx, r.Run.Parent)
	if err != nil {
		return
	}
	if st, _ := m.ProcState(parent); st != ProcRunning {
		return
	}
	status, err := supervisor.NewClient(m.supDir(parent)).Status(ctx)
	if err != nil {
		return
	}
	pids := map[string]int{}
	for _, s := range status.Services {
		pids[s.Name] = s.Pid
	}
	for i := range svcs {
		svcs[i].Pid = pids[svcs[i].Name]
	}
}

// launch starts r's supervisor in its cgroup (and network namespace) and
// records the run as running; on failure nothing of it remains. The
// cgroup and the address are made while the new process starts up.
func (m *Manager) launch(ctx context.Context, r engine.Ref, cfg *config.Config, display bool) (pid int, err error) {
	cell, _ := readCell(m.cellPath(r))
	// A cell has no network but what it is granted; a display's X server
	// listens on an abstract socket, which only a network namespace keeps
	// the run's own.
	isolate := r.Workspace.Net || cfg.Network.Own(r.Run.Role) || cell != nil || display
	prep := make(chan prepared, 1)
	go func() { prep <- m.prepare(ctx, r, cfg, isolate) }()
	var p *prepared
	wait := func() *prepared {
		if p == nil {
			v := <-prep
			p = &v
		}
		return p
	}
	defer func() {
		if p := wait(); err != nil {
			if p.cg != nil {
				p.cg.Remove(context.Background())
			}
			m.releaseAddr(r)
		}
	}()
	spec := m.supervisorSpec(r, isolate)
	if spec.Egress, err = egressPolicy(r, cfg, isolate, spec.Env); err != nil {
		return 0, err
	}
	if isolate && cell == nil { // a cell reaches only what it is granted
		if spec.HostPorts, err = hostPorts(cfg, spec.Env); err != nil {
			return 0, err
		}
	}
	spec.Confine, spec.Hide = m.confinement(ctx, r, cfg)
	if display {
		spec.Display, spec.Hide = desktop.Display, withTmp(spec.Hide)
	}
	if cell != nil && spec.Confine != nil {
		spec.Confine.Writable, spec.Egress = cellConfinement(cell, r, cfg, m.cellTmp(r))
	}
	start := map[string]any{"pid": 0}
	if spec.Secrets = secretsPolicy(r, cfg); spec.Secrets != nil {
		start["secrets"] = secretsEvidence(spec.Secrets, spec.Env)
	}
	if n := len(supervisor.SocketPath(spec.Dir)); n > supervisor.MaxSocketPath {
		return 0, fmt.Errorf("the state directory %s is too deep for %s's supervisor socket (%d bytes, at most %d): use a shorter TINE_HOME: %w",
			m.lay.Root(), r.Run.Name, n, supervisor.MaxSocketPath, tine.ErrUnsupported)
	}
	pid, err = supervisor.Launch(ctx, spec, func(pid int) error {
		p := wait()
		if p.err != nil {
			return p.err
		}
		if err := p.cg.Add(pid); err != nil {
			return err
		}
		if isolate {
			return m.attach(r, pid, p.addr)
		}
		return nil
	})
	if err != nil {
		netns.Detach(r.Run.ID)
		return 0, fmt.Errorf("starting %s: %w", r.Run.Name, err)
	}
	wait() // prepare claims r.Run.Addr while the supervisor starts
	start["pid"], start["addr"] = pid, r.Run.Addr
	err = m.setProc(ctx, r, tine.ProcRunning, tine.EventStart, start)
	if err != nil {
		supervisor.NewClient(spec.Dir).Stop(ctx, time.Second)
		netns.Detach(r.Run.ID)
	}
	return pid, err
}

// hostPorts are the ports of the host's loopback a run with a network of
// its own reaches: [network] host_ports and those its launcher's agents
// are pointed at (an exec's are added when it starts).
func hostPorts(cfg *config.Config, env []string) ([]int, error) {
	out := egress.AgentPorts(env)
	for _, p := range cfg.Network.HostPorts {
		if p < 1 || p > 65535 {
			return nil, fmt.Errorf("[network] host_ports: %d is no port (1 to 65535): %w", p, tine.ErrInvalid)
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}

// prepared is what a run needs before its supervisor may start anything.
type prepared struct {
	cg   *cgroup.Group
	addr netip.Addr
	err  error
}

func (m *Manager) prepare(ctx context.Context, r engine.Ref, cfg *config.Config, isolate bool) prepared {
	var p prepared
	if isolate {
		if p.addr, p.err = m.claimAddr(ctx, r); p.err != nil {
			return p
		}
	}
	if p.err = control.Of(m.eng).IssueCaps(ctx, r.Workspace, r.Run); p.err != nil { // the run's token, which its supervisor binds
		return p
	}
	p.cg, p.err = m.cgroup(r, cfg)
	return p
}

func (m *Manager) supervisorSpec(r engine.Ref, isolate bool) supervisor.Spec {
	spec := supervisor.Spec{Run: r.Run.ID, Hostname: r.Run.Name, Dir: m.supDir(r), LogDir: m.LogDir(r),
		Workspace: r.Workspace.Path, Net: isolate, Control: m.lay.Control(),
		CapDir: m.lay.Run(r.Workspace.ID, r.Run.ID).Cap()}
	spec.Env = runenv.For(r.Workspace, r.Run, os.Environ(), os.Getuid())
	owner := engine.OwnerAccount(r.Workspace)
	spec.Owner = &owner
	if bin, err := os.Executable(); err == nil {
		spec.Binary = bin
	}
	if view := m.eng.Path(r.Workspace, r.Run); view != r.Workspace.Path {
		spec.View = view
	}
	return spec
}

// cgroup makes r's cgroup with its limits: tine.toml's, and a fork's
// defaults for what the file leaves out (config.Limits.Of). On a machine
// without a controller for a default, the run goes without it; a limit
// tine.toml gives is never dropped.
func (m *Manager) cgroup(r engine.Ref, cfg *config.Config) (*cgroup.Group, error) {
	cg, err := cgroup.Open(r.Run.ID)
	if err != nil {
		return nil, fmt.Errorf("the run's cgroup: %w", err)
	}
	want, given := cfg.Limits.Of(r.Run.Role, cgroup.MachineMemory()), cfg.Limits.Given()
	err = cg.SetLimits(want)
	if errors.Is(err, cgroup.ErrUnsupported) && want != given {
		err = cg.SetLimits(given)
	}
	if err != nil {
		cg.Remove(context.Background())
		return nil, fmt.Errorf("limits of tine.toml: %w", err)
	}
	return cg, nil
}

// attach wires the supervisor's network namespace to the tine bridge,
// which is set up once per engine (and again if it went missing).
func (m *Manager) attach(r engine.Ref, pid int, addr netip.Addr) error {
	m.bridgeOnce.Do(func() { m.bridgeErr = m.ensureBridge(r) })
	if m.bridgeErr != nil {
		return m.bridgeErr
	}
	err := netns.Attach(m.net, pid, r.Run.ID, addr)
	if err != nil {
		if berr := m.ensureBridge(r); berr != nil {
			return berr
		}
		err = netns.Attach(m.net, pid, r.Run.ID, addr)
	}
	return err
}

func (m *Manager) ensureBridge(r engine.Ref) error {
	if err := netns.EnsureBridge(m.net); err != nil {
		if !errors.Is(err, netns.ErrNAT) {
			return err
		}
		m.warn("runs of %s will not reach outside the host: %v", r.Workspace.Name, err)
	}
	return nil
}

func (m *Manager) setProc(ctx context.Context, r engine.Ref, st tine.ProcState, kind tine.EventKind, detail any) error {
	return m.eng.Store().Update(ctx, func(tx tine.Tx) error {
		r.Run.Proc = st
		return firstError(tx.UpdateRun(r.Run), tx.AppendEvent(tine.NewEvent(time.Now(), r.Workspace.ID, r.Run.ID, kind, detail)))
	})
}

// Stop ends every process of run ref and its supervisor, leaving its files
// as they are. Stopping a stopped run is not an error; stopping a dead one
// cleans up what its supervisor left.
func (m *Manager) Stop(ctx context.Context, ref string) (*tine.Run, error) {
	r, unlock, err := m.eng.LockRun(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return r.Run, m.stop(ctx, r, tine.EventStop)
}

// The forks holding processes forked live from r lose them with r's pid
// namespace: their services are started again once r has stopped.
func (m *Manager) stop(ctx context.Context, r engine.Ref, why tine.EventKind) error {
	heirs := m.heirs(ctx, r)
	err := m.stopSupervisor(ctx, r, why)
	m.restartHeirs(ctx, r, heirs)
	return err
}

func (m *Manager) stopSupervisor(ctx context.Context, r engine.Ref, why tine.EventKind) error {
	if pid := m.supervised(r); pid > 0 {
		sctx, cancel := context.WithTimeout(ctx, m.stopGrace+5*time.Second)
		err := supervisor.NewClient(m.supDir(r)).Stop(sctx, m.stopGrace)
		cancel()
		if err != nil {
			m.warn("stopping %s's supervisor: %v; killing it", r.Run.Name, err)
		}
	}
	m.cleanup(r)
	if r.Run.Proc == tine.ProcStopped || r.Run.Proc == "" {
		return nil
	}
	return m.setProc(ctx, r, tine.ProcStopped, why, nil)
}

// cleanup kills whatever is left in r's cgroup and removes it, its veth,
// its supervisor's files and its record of processes forked live into it.
func (m *Manager) cleanup(r engine.Ref) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if cg, err := cgroup.Load(r.Run.ID); err == nil {
		if err := cg.Remove(ctx); err != nil {
			m.warn("removing %s's cgroup: %v", r.Run.Name, err)
		}
	}
	if err := netns.Detach(r.Run.ID); err != nil && !errors.Is(err, netns.ErrUnsupported) {
		m.warn("removing %s's network link: %v", r.Run.Name, err)
	}
	m.releaseAddr(r)
	supervisor.Forget(m.supDir(r))
	rd := m.lay.Run(r.Workspace.ID, r.Run.ID)
	os.Remove(rd.DisplayActive()) // the display ended with the run
	os.Remove(rd.DisplayIdle())
	if err := m.writeAdopted(r, nil); err != nil { // the cgroup's removal ended them
		m.warn("removing %s's record of live-forked processes: %v", r.Run.Name, err)
	}
}

// freeze freezes r's processes, when it has a supervisor, and returns the
// function that thaws them. The freeze is recorded and watched
// (supervisor.Freeze): a crash of this process leaves nothing frozen.
func (m *Manager) freeze(ctx context.Context, r engine.Ref) (func(), error) {
	if m.supervised(r) == 0 {
		return func() {}, nil
	}
	cg, err := cgroup.Load(r.Run.ID)
	if err != nil {
		return func() {}, nil
	}
	return supervisor.Freeze(ctx, cg, m.lay.Run(r.Workspace.ID, r.Run.ID).Frozen(), r.Run.Name)
}

// thawAbandoned thaws r when a command that froze it died before thawing
// it, and says so; the caller holds r's workspace lock.
func (m *Manager) thawAbandoned(r engine.Ref) {
	cg, _ := cgroup.Load(r.Run.ID) // a group gone: only the record is left
	a, err := supervisor.ThawAbandoned(cg, m.lay.Run(r.Workspace.ID, r.Run.ID).Frozen())
	switch {
	case err != nil:
		m.warn("thawing %s, left frozen by a command that died: %v", r.Run.Name, err)
	case a != nil && a.Thawed:
		m.say("thawed %s, which a command that died (pid %d) had left frozen", r.Run.Name, a.Pid)
	}
}

// Client returns a client of run ref's supervisor, launching the supervisor
// (without services) when the run has none.
func (m *Manager) Client(ctx context.Context, ref string) (engine.Ref, *supervisor.Client, error) {
	r, err := m.eng.FindRun(ctx, ref)
	if err != nil {
		return r, nil, err
	}
	if m.supervised(r) > 0 {
		return r, supervisor.NewClient(m.supDir(r)), nil
	}
	unlock, err := m.eng.LockWorkspace(r.Workspace.ID)
	if err != nil {
		return r, nil, err
	}
	defer unlock()
	if r, err = m.eng.FindRun(ctx, r.Run.ID); err != nil {
		return r, nil, err
	}
	if _, err := m.start(ctx, r, StartOptions{}); err != nil {
		return r, nil, err
	}
	return r, supervisor.NewClient(m.supDir(r)), nil
}

// StopIdle stops run ref's supervisor when nothing runs under it (no
// command, no service): what tine exec does with a supervisor it launched
// for one command. A supervisor left up is only a leak, so failing to tell
// or to stop is not an error.
func (m *Manager) StopIdle(ctx context.Context, ref string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	r, err := m.eng.FindRun(ctx, ref)
	if err != nil || m.supervised(r) == 0 {
		return
	}
	st, err := supervisor.NewClient(m.supDir(r)).Status(ctx)
	if err != nil || len(st.Execs) > 0 || len(st.Services) > 0 {
		return
	}
	m.Stop(ctx, r.Run.ID)
}

// Launch launches, all at once under one workspace lock, the supervisors
// (without services) of the runs refs of workspace ws that have none: what
// Client does for one run, for many that are about to run commands.
func (m *Manager) Launch(ctx context.Context, ws string, refs []string) error {
	unlock, err := m.eng.LockWorkspace(ws)
	if err != nil {
		return err
	}
	defer unlock()
	errs := make([]error, len(refs))
	var wg sync.WaitGroup
	for i, ref := range refs {
		r, err := m.eng.FindRun(ctx, ref)
		if err != nil {
			errs[i] = err
			continue
		}
		if r.Workspace.ID != ws {
			errs[i] = fmt.Errorf("run %s is not in workspace %s: %w", r.Run.Name, ws, tine.ErrInvalid)
			continue
		}
		if m.supervised(r) > 0 {
			continue
		}
		wg.Go(func() {
			_, errs[i] = m.start(ctx, r, StartOptions{})
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// stopIdle stops r's supervisor when nothing else runs in r, before its
// view is replaced (the supervisor holds the old one mounted).
func (m *Manager) stopIdle(ctx context.Context, r engine.Ref) error {
	if m.supervised(r) == 0 {
		return nil
	}
	return m.stop(ctx, r, tine.EventStop)
}

// quiesce makes r safe to write into: a supervised run is frozen for the
// write (its processes go on afterwards); otherwise no tine exec command
// may be running in it unless force is set.
func (m *Manager) quiesce(ctx context.Context, r engine.Ref, force bool) (func(), error) {
	if m.supervised(r) > 0 {
		return m.freeze(ctx, r)
	}
	if err := m.checkIdle(r, force); err != nil {
		return nil, err
	}
	return func() {}, nil
}

// SupervisorPid is the host pid of run r's live supervisor, or 0.
func (m *Manager) SupervisorPid(r engine.Ref) int { return m.supervised(r) }
