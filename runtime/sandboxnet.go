package runtime

import (
	"log"
	"os"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/config"
	"github.com/tinehq/tine/egress"
	"github.com/tinehq/tine/engine"
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
