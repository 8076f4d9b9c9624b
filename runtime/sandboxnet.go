package runtime

import (
	"encoding/json"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/config"
	"github.com/tinehq/tine/egress"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/atomicfile"
	"github.com/tinehq/tine/sandbox/netproxy"
	"github.com/tinehq/tine/supervisor"
)

// sandboxNet is the network tine exec's sandbox (a normal user's, without
// the daemon) gives a command of run r with config cfg: for a fork with a
// network of its own ([network] fork_network not "host") held by a policy,
// a proxy enforcing what r's supervisor would (egressPolicy, with the APIs
// env's agents are pointed at), reaching the host ports it would forward
// (hostPorts), and recording each refusal where tine ps reads r's. It is
// nil for a run that shares the host's network and for a fork whose
// egress is open ([network] fork_egress = "open").
func (m *Manager) sandboxNet(r engine.Ref, cfg *config.Config, env []string) (*netproxy.Proxy, error) {
	if r.Run.Role != tine.RoleFork || !cfg.Network.Own(r.Run.Role) {
		return nil, nil
	}
	policy, err := egressPolicy(r, cfg, true, env)
	if err != nil || policy == nil {
		return nil, err
	}
	ports, err := hostPorts(cfg, env)
	if err != nil {
		return nil, err
	}
	dir := m.supDir(r)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := supervisor.EgressPath(dir)
	return netproxy.New(*policy, ports, func(rec egress.Record) {
		if err := egress.Append(path, rec); err != nil {
			log.Printf("egress: recording %+v: %v", rec, err)
		}
	}), nil
}

// NetKind is the kind of the egress.Record that says a fork's command ran
// in the host's network, unrestricted, because its network of its own
// could not be set up in tine exec's sandbox (its Note says why).
const NetKind = "network"

// NetFailed is tine exec's sandbox's answer when the fork's network of
// its own cannot be set up (sandbox.Spec.NetFailed): with [network]
// sandbox_fallback = "refuse" an error, and the command does not run;
// else it records on the run, where tine ps and tine summary read its
// refusals, that the command runs in the host's network and why, and
// returns nil. The caller says so on standard error.
func (s *Sandboxed) NetFailed(why error) error {
	if !s.fallback {
		return fmt.Errorf("fork %s's network of its own could not be set up (%v), and [network] sandbox_fallback = \"refuse\"", s.r.Run.Name, why)
	}
	rec := egress.Record{Time: time.Now().UTC(), Kind: NetKind, Note: "the host's, unrestricted: its own could not be set up (" + why.Error() + ")"}
	if err := egress.Append(supervisor.EgressPath(s.m.supDir(s.r)), rec); err != nil {
		log.Printf("egress: recording %+v: %v", rec, err)
	}
	s.Net = nil
	return nil
}

// Started says, while the command runs in its network of its own, which
// policy holds it, where tine ps reads a supervisor's
// (supervisor.EgressPolicyPath); Ended takes it away once no other
// command runs in the run (Sessions) and no supervisor writes it.
func (s *Sandboxed) Started() {
	if s.Net == nil {
		return
	}
	b, err := json.Marshal(s.Net.Policy())
	if err == nil {
		err = atomicfile.Write(supervisor.EgressPolicyPath(s.m.supDir(s.r)), b, 0o644)
	}
	if ports := s.Net.HostPorts(); err == nil && len(ports) > 0 {
		if b, err = json.Marshal(ports); err == nil {
			err = atomicfile.Write(supervisor.HostPortsPath(s.m.supDir(s.r)), b, 0o644)
		}
	}
	if err != nil {
		log.Printf("egress: recording the sandbox's policy: %v", err)
		return
	}
	s.serving = true
}

// Covered says, once the command's mounts are in place, how it is
// confined (what they hid: hidden, and others other workspaces), where
// tine ps reads a supervisor's (supervisor.ConfinementPath); Ended takes
// it away as it does the policy. Nothing when a supervisor of the run
// writes its own.
func (s *Sandboxed) Covered(hidden []string, others int) {
	if s.Confine == nil && s.Hide == nil {
		return
	}
	if st, _ := s.m.ProcState(s.r); st == ProcRunning {
		return
	}
	err := os.MkdirAll(s.m.supDir(s.r), 0o700)
	if err == nil {
		err = supervisor.WriteConfinement(s.m.supDir(s.r), s.Confine, hidden, others)
	}
	if err != nil {
		log.Printf("confine: recording the sandbox's confinement: %v", err)
		return
	}
	s.covered = true
}

// Ended is the command's end (see Started and Covered), once its session
// is removed.
func (s *Sandboxed) Ended() {
	if s.serving || s.covered {
		s.m.forgetSandbox(s.r)
	}
}

// forgetSandbox removes what tine exec's sandbox wrote of run r for tine
// ps (its policy, confinement and host ports) once no command runs in r
// and no supervisor writes them instead: at a command's end (Ended), and
// where a tine exec killed before its end left them (tine ps, tine gc),
// which tine ps showed as if they held a command still.
func (m *Manager) forgetSandbox(r engine.Ref) {
	if st, _ := m.ProcState(r); st == ProcRunning || len(m.Sessions(r)) > 0 {
		return
	}
	supervisor.ForgetRecords(m.supDir(r))
}
