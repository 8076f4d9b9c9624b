package runtime

import (
	"context"
	"encoding/json"
	"os"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/config"
	"github.com/tinehq/tine/egress"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/supervisor"
)

// egressPolicy is what run r may reach: nil (open) for a source, for a run
// sharing the host's network (nothing to confine it by) and with
// fork_egress = "open"; else the preset for the agents (and the APIs env's
// endpoint variables point at) and the workspace's package registries,
// plus [network] egress.
func egressPolicy(r engine.Ref, cfg *config.Config, isolate bool, env []string) (*egress.Policy, error) {
	if r.Run.Role != tine.RoleFork || !isolate || !cfg.Network.ConfinesForks() {
		return nil, nil
	}
	rules, err := cfg.Network.EgressRules()
	if err != nil {
		return nil, err
	}
	preset := append(egress.Preset(r.Workspace.Path), egress.AgentRules(env)...)
	return &egress.Policy{Rules: append(preset, rules...), Upstream: upstream(cfg)}, nil
}

// upstream is the name servers a run's resolver asks: [network] resolvers,
// else the host's /etc/resolv.conf.
func upstream(cfg *config.Config) []string {
	if up := cfg.Network.Upstream(); len(up) > 0 {
		return up
	}
	b, _ := os.ReadFile("/etc/resolv.conf")
	return egress.Nameservers(string(b))
}

// Refusals returns what run ref's egress policy refused, oldest first:
// connections and names, each once.
func (m *Manager) Refusals(ctx context.Context, ref string) ([]egress.Record, error) {
	r, err := m.eng.FindRun(ctx, ref)
	if err != nil {
		return nil, err
	}
	return egress.Read(supervisor.EgressPath(m.supDir(r)))
}

// egressState is the policy r's supervisor enforces and what it refused.
func (m *Manager) egressState(r engine.Ref) (*egress.Policy, []egress.Record) {
	dir := m.supDir(r)
	var p *egress.Policy
	if b, err := os.ReadFile(supervisor.EgressPolicyPath(dir)); err == nil {
		p = new(egress.Policy)
		if json.Unmarshal(b, p) != nil {
			p = nil
		}
	}
	recs, _ := egress.Read(supervisor.EgressPath(dir))
	return p, recs
}
