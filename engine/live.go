package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/cgroup"
	"github.com/tinehq/tine/config"
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

// NetConfig is the tine bridge every isolated run is attached to.
var NetConfig = netns.Config{NAT: true}

// StopGrace is how long a stopped run's processes get between SIGTERM and
// SIGKILL.
var StopGrace = 5 * time.Second

func (e *Engine) supDir(r Ref) string {
	return e.lay.Run(r.Workspace.ID, r.Run.ID).Sup()
}

// LogDir is where run r's service logs are.
func (e *Engine) LogDir(r Ref) string {
	return e.lay.Run(r.Workspace.ID, r.Run.ID).Logs()
}

// ProcState returns the checked state of run r's processes and its
// supervisor's host pid when it is alive.
func (e *Engine) ProcState(r Ref) (string, int) {
	pid, alive, _ := supervisor.Pid(e.supDir(r))
	switch {
	case alive:
		return ProcRunning, pid
	case r.Run.Proc == tine.ProcRunning:
		return ProcDead, 0
	}
	return ProcStopped, 0
}

// supervised returns the pid of run r's supervisor, or 0.
func (e *Engine) supervised(r Ref) int {
	pid, alive, _ := supervisor.Pid(e.supDir(r))
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
func (e *Engine) Start(ctx context.Context, ref string, o StartOptions) (*StartResult, error) {
	r, unlock, err := e.lockRun(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return e.start(ctx, r, o)
}

func (e *Engine) start(ctx context.Context, r Ref, o StartOptions) (*StartResult, error) {
	if !r.Run.Live() {
		return nil, fmt.Errorf("run %s is %s: %w", r.Run.Name, r.Run.State, tine.ErrState)
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("running a run's processes under a supervisor needs root: %w", tine.ErrPrivilege)
	}
	cfg, err := config.Load(e.Path(r.Workspace, r.Run))
	if err != nil {
		return nil, err
	}
	res := &StartResult{Run: r.Run}
	res.Pid = e.supervised(r)
	if res.Pid == 0 {
		res.Recovered = r.Run.Proc == tine.ProcRunning
		if res.Recovered {
			e.cleanup(r)
		}
		if res.Pid, err = e.launch(ctx, r, cfg); err != nil {
			return nil, err
		}
		res.Launched = true
	}
	if o.Services && len(cfg.Services) > 0 {
		skip := maps.Clone(o.Skip)
		if skip == nil {
			skip = map[string]bool{}
		}
		for _, a := range e.adopted(r) { // forked live into r: already running
			skip[a.Service] = true
		}
		svcs := e.services(r, cfg, skip)
		if len(svcs) == 0 {
			return res, nil // every service is running already (forked live)
		}
		res.Services, err = supervisor.NewClient(e.supDir(r)).StartServices(ctx, svcs, o.NoWait)
		if err != nil {
			res.ServiceErr = err.Error()
			return res, err
		}
	}
	return res, nil
}

// services maps tine.toml's services to what the supervisor runs.
func (e *Engine) services(r Ref, cfg *config.Config, skip map[string]bool) []supervisor.Service {
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

// launch starts r's supervisor in its cgroup (and network namespace) and
// records the run as running; on failure nothing of it remains. The
// cgroup and the address are made while the new process starts up.
func (e *Engine) launch(ctx context.Context, r Ref, cfg *config.Config) (pid int, err error) {
	cell, _ := readCell(e.cellPath(r))
	isolate := r.Workspace.Net || cfg.Network.Isolate || cell != nil // a cell has no network but what it is granted
	prep := make(chan prepared, 1)
	go func() { prep <- e.prepare(ctx, r, cfg, isolate) }()
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
			e.releaseAddr(r)
		}
	}()
	spec := e.supervisorSpec(r, isolate)
	if spec.Egress, err = egressPolicy(r, cfg, isolate); err != nil {
		return 0, err
	}
	spec.Confine, spec.Hide = e.confinement(ctx, r, cfg)
	if cell != nil && spec.Confine != nil {
		spec.Confine.Writable, spec.Egress = cellConfinement(cell, r, cfg, e.cellTmp(r))
	}
	start := map[string]any{"pid": 0, "addr": r.Run.Addr}
	if spec.Secrets = secretsPolicy(r, cfg); spec.Secrets != nil {
		start["secrets"] = secretsEvidence(spec.Secrets, spec.Env)
	}
	if n := len(supervisor.SocketPath(spec.Dir)); n > supervisor.MaxSocketPath {
		return 0, fmt.Errorf("the state directory %s is too deep for %s's supervisor socket (%d bytes, at most %d): use a shorter TINE_HOME: %w",
			e.home, r.Run.Name, n, supervisor.MaxSocketPath, tine.ErrUnsupported)
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
			return e.attach(r, pid, p.addr)
		}
		return nil
	})
	if err != nil {
		netns.Detach(r.Run.ID)
		return 0, fmt.Errorf("starting %s: %w", r.Run.Name, err)
	}
	start["pid"] = pid
	err = e.setProc(ctx, r, tine.ProcRunning, "start", start)
	if err != nil {
		supervisor.NewClient(spec.Dir).Stop(ctx, time.Second)
		netns.Detach(r.Run.ID)
	}
	return pid, err
}

// prepared is what a run needs before its supervisor may start anything.
type prepared struct {
	cg   *cgroup.Group
	addr netip.Addr
	err  error
}

func (e *Engine) prepare(ctx context.Context, r Ref, cfg *config.Config, isolate bool) prepared {
	var p prepared
	if isolate {
		if p.addr, p.err = e.claimAddr(ctx, r); p.err != nil {
			return p
		}
	}
	if p.err = e.issueCaps(ctx, r.Workspace, r.Run); p.err != nil {
		return p
	}
	p.cg, p.err = e.cgroup(r, cfg)
	return p
}

func (e *Engine) supervisorSpec(r Ref, isolate bool) supervisor.Spec {
	spec := supervisor.Spec{Run: r.Run.ID, Hostname: r.Run.Name, Dir: e.supDir(r), LogDir: e.LogDir(r),
		Workspace: r.Workspace.Path, Net: isolate, Control: e.ControlDir(),
		CapDir: e.CapDir(r)}
	spec.Env = ExecEnv(r, os.Environ(), os.Getuid())
	owner := OwnerAccount(r.Workspace)
	spec.Owner = &owner
	if bin, err := os.Executable(); err == nil {
		spec.Binary = bin
	}
	if view := e.Path(r.Workspace, r.Run); view != r.Workspace.Path {
		spec.View = view
	}
	return spec
}

// cgroup makes r's cgroup with tine.toml's limits.
func (e *Engine) cgroup(r Ref, cfg *config.Config) (*cgroup.Group, error) {
	cg, err := cgroup.Open(r.Run.ID)
	if err != nil {
		return nil, fmt.Errorf("the run's cgroup: %w", err)
	}
	mem, _ := cfg.Limits.MemoryBytes()
	if err := cg.SetLimits(cgroup.Limits{MemoryBytes: mem, CPU: cfg.Limits.CPU, Pids: cfg.Limits.Pids}); err != nil {
		cg.Remove(context.Background())
		return nil, fmt.Errorf("limits of tine.toml: %w", err)
	}
	return cg, nil
}

// attach wires the supervisor's network namespace to the tine bridge,
// which is set up once per engine (and again if it went missing).
func (e *Engine) attach(r Ref, pid int, addr netip.Addr) error {
	e.bridgeOnce.Do(func() { e.bridgeErr = e.ensureBridge(r) })
	if e.bridgeErr != nil {
		return e.bridgeErr
	}
	err := netns.Attach(NetConfig, pid, r.Run.ID, addr)
	if err != nil {
		if berr := e.ensureBridge(r); berr != nil {
			return berr
		}
		err = netns.Attach(NetConfig, pid, r.Run.ID, addr)
	}
	return err
}

func (e *Engine) ensureBridge(r Ref) error {
	if err := netns.EnsureBridge(NetConfig); err != nil {
		if !errors.Is(err, netns.ErrNAT) {
			return err
		}
		e.warn("runs of %s will not reach outside the host: %v", r.Workspace.Name, err)
	}
	return nil
}

func (e *Engine) setProc(ctx context.Context, r Ref, st tine.ProcState, kind string, detail any) error {
	return e.store.Update(ctx, func(tx tine.Tx) error {
		r.Run.Proc = st
		return firstError(tx.UpdateRun(r.Run), tx.AppendEvent(e.event(r.Workspace.ID, r.Run.ID, kind, detail)))
	})
}

// Stop ends every process of run ref and its supervisor, leaving its files
// as they are. Stopping a stopped run is not an error; stopping a dead one
// cleans up what its supervisor left.
func (e *Engine) Stop(ctx context.Context, ref string) (*tine.Run, error) {
	r, unlock, err := e.lockRun(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return r.Run, e.stop(ctx, r, "stop")
}

func (e *Engine) stop(ctx context.Context, r Ref, why string) error {
	if pid := e.supervised(r); pid > 0 {
		sctx, cancel := context.WithTimeout(ctx, StopGrace+5*time.Second)
		err := supervisor.NewClient(e.supDir(r)).Stop(sctx, StopGrace)
		cancel()
		if err != nil {
			e.warn("stopping %s's supervisor: %v; killing it", r.Run.Name, err)
		}
	}
	e.cleanup(r)
	if r.Run.Proc == tine.ProcStopped || r.Run.Proc == "" {
		return nil
	}
	return e.setProc(ctx, r, tine.ProcStopped, why, nil)
}

// cleanup kills whatever is left in r's cgroup and removes it, its veth
// and its supervisor's files.
func (e *Engine) cleanup(r Ref) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if cg, err := cgroup.Load(r.Run.ID); err == nil {
		if err := cg.Remove(ctx); err != nil {
			e.warn("removing %s's cgroup: %v", r.Run.Name, err)
		}
	}
	if err := netns.Detach(r.Run.ID); err != nil && !errors.Is(err, netns.ErrUnsupported) {
		e.warn("removing %s's network link: %v", r.Run.Name, err)
	}
	e.releaseAddr(r)
	supervisor.Forget(e.supDir(r))
}

// freeze freezes r's processes, when it has a supervisor, and returns the
// function that thaws them.
func (e *Engine) freeze(ctx context.Context, r Ref) (func(), error) {
	if e.supervised(r) == 0 {
		return func() {}, nil
	}
	cg, err := cgroup.Load(r.Run.ID)
	if err != nil {
		return func() {}, nil
	}
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := cg.Freeze(fctx); err != nil {
		cg.Thaw()
		return nil, fmt.Errorf("freezing %s: %w", r.Run.Name, err)
	}
	return func() {
		if err := cg.Thaw(); err != nil {
			e.warn("thawing %s: %v", r.Run.Name, err)
		}
	}, nil
}

// Client returns a client of run ref's supervisor, launching the supervisor
// (without services) when the run has none.
func (e *Engine) Client(ctx context.Context, ref string) (Ref, *supervisor.Client, error) {
	r, err := e.FindRun(ctx, ref)
	if err != nil {
		return r, nil, err
	}
	if e.supervised(r) > 0 {
		return r, supervisor.NewClient(e.supDir(r)), nil
	}
	unlock, err := e.lockWorkspace(r.Workspace.ID)
	if err != nil {
		return r, nil, err
	}
	defer unlock()
	if r, err = e.FindRun(ctx, r.Run.ID); err != nil {
		return r, nil, err
	}
	if _, err := e.start(ctx, r, StartOptions{}); err != nil {
		return r, nil, err
	}
	return r, supervisor.NewClient(e.supDir(r)), nil
}

// StopIdle stops run ref's supervisor when nothing runs under it (no
// command, no service): what tine exec does with a supervisor it launched
// for one command. A supervisor left up is only a leak, so failing to tell
// or to stop is not an error.
func (e *Engine) StopIdle(ctx context.Context, ref string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	r, err := e.FindRun(ctx, ref)
	if err != nil || e.supervised(r) == 0 {
		return
	}
	st, err := supervisor.NewClient(e.supDir(r)).Status(ctx)
	if err != nil || len(st.Execs) > 0 || len(st.Services) > 0 {
		return
	}
	e.Stop(ctx, r.Run.ID)
}

// Launch launches, all at once under one workspace lock, the supervisors
// (without services) of the runs refs of workspace ws that have none: what
// Client does for one run, for many that are about to run commands.
func (e *Engine) Launch(ctx context.Context, ws string, refs []string) error {
	unlock, err := e.lockWorkspace(ws)
	if err != nil {
		return err
	}
	defer unlock()
	errs := make([]error, len(refs))
	var wg sync.WaitGroup
	for i, ref := range refs {
		r, err := e.FindRun(ctx, ref)
		if err != nil {
			errs[i] = err
			continue
		}
		if r.Workspace.ID != ws {
			errs[i] = fmt.Errorf("run %s is not in workspace %s: %w", r.Run.Name, ws, tine.ErrInvalid)
			continue
		}
		if e.supervised(r) > 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.start(ctx, r, StartOptions{})
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// stopIdle stops r's supervisor when nothing else runs in r, before its
// view is replaced (the supervisor holds the old one mounted).
func (e *Engine) stopIdle(ctx context.Context, r Ref) error {
	if e.supervised(r) == 0 {
		return nil
	}
	return e.stop(ctx, r, "stop")
}

// quiesce makes r safe to write into: a supervised run is frozen for the
// write (its processes go on afterwards); otherwise no tine exec command
// may be running in it unless force is set.
func (e *Engine) quiesce(ctx context.Context, r Ref, force bool) (func(), error) {
	if e.supervised(r) > 0 {
		return e.freeze(ctx, r)
	}
	if err := e.checkIdle(r, force); err != nil {
		return nil, err
	}
	return func() {}, nil
}

// RunEnv is the environment that tells a process which run it is in: its
// name, id, workspace (name, and path: where the run's files are inside
// it) and role, which agent hooks read.
func RunEnv(r Ref) []string {
	return []string{"TINE_RUN=" + r.Run.Name, "TINE_RUN_ID=" + r.Run.ID,
		"TINE_WORKSPACE=" + r.Workspace.Name, "TINE_WORKSPACE_PATH=" + r.Workspace.Path,
		"TINE_ROLE=" + string(r.Run.Role)}
}

// ControlDir holds the daemon's socket; every run sees it at
// supervisor.RunDir/ctl.
func (e *Engine) ControlDir() string { return e.lay.Control() }

// SocketPath is where tine serve listens.
func (e *Engine) SocketPath() string { return e.lay.Socket() }

// CapDir holds run r's capability token; the run sees it at
// supervisor.RunDir/cap.
func (e *Engine) CapDir(r Ref) string {
	return e.lay.Run(r.Workspace.ID, r.Run.ID).Cap()
}
