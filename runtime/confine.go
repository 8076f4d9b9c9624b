package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/config"
	"github.com/tinehq/tine/confine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/sandbox/netproxy"
	"github.com/tinehq/tine/supervisor"
)

// confinement is how run r's processes are confined: every run's mount
// namespace covers the state directory (but the run's own directory) and
// the other workspaces, and seccomp denies what an agent never needs; a
// fork also gets a /tmp and a layer over the owner's home of its own (kept
// in its directory), does not see what its fork-run hid from it
// (ForkOptions.Hide), and may write only to its workspace path, /tmp, /dev,
// that home, its scratch directory and [confine] writable (Landlock).
func (m *Manager) confinement(ctx context.Context, r engine.Ref, cfg *config.Config) (*confine.Spec, *supervisor.Hide) {
	if cfg.Confine.Off {
		return nil, nil
	}
	fork := r.Run.Role == tine.RoleFork
	hide := &supervisor.Hide{State: m.lay.Root(), Keep: m.lay.Run(r.Workspace.ID, r.Run.ID).Dir(), Tmp: fork, Run: fork, Dev: fork}
	m.eng.Store().View(ctx, func(tx tine.Tx) error {
		all, err := tx.Workspaces()
		for _, w := range all {
			if w.ID != r.Workspace.ID {
				hide.Paths = append(hide.Paths, w.Path)
			}
		}
		return err
	})
	hide.Private = m.eng.Hidden(r)
	spec := &confine.Spec{Seccomp: true}
	if fork {
		spec.DenyMounts, spec.DropCaps, spec.DenySetID = true, true, true
		home := engine.OwnerAccount(r.Workspace).Home
		hide.Home, hide.HomeLayer = home, m.lay.Run(r.Workspace.ID, r.Run.ID).Home()
		spec.Writable = []string{r.Workspace.Path, "/tmp", "/var/tmp", "/dev", m.ScratchDir(r), home}
		if t := os.Getenv("TMPDIR"); t != "" {
			spec.Writable = append(spec.Writable, t)
		}
		for _, p := range cfg.Confine.Writable {
			if !filepath.IsAbs(p) {
				p = filepath.Join(r.Workspace.Path, p)
			}
			spec.Writable = append(spec.Writable, p)
		}
		// The rest of the view read-only (Landlock does not stop chmod or
		// chown), the run's own records too: only its logs stay writable,
		// which its services and live-forked copies write by path.
		hide.Writable = append(slices.Clone(spec.Writable), m.LogDir(r))
	}
	return spec, hide
}

// readConfinement is what the supervisor of dir said it confines its run
// by; nil when it is not running.
func readConfinement(dir string) *confine.Applied {
	b, err := os.ReadFile(supervisor.ConfinementPath(dir))
	if err != nil {
		return nil
	}
	var r confine.Applied
	if json.Unmarshal(b, &r) != nil {
		return nil
	}
	return &r
}

// ConfinesWrites reports whether tine limits the writes of run ref's
// processes itself (a fork, [confine] not off, Landlock in the kernel).
func (m *Manager) ConfinesWrites(ctx context.Context, ref string) bool {
	r, err := m.eng.FindRun(ctx, ref)
	if err != nil || r.Run.Role != tine.RoleFork {
		return false
	}
	cfg, err := m.eng.Config(ctx, r)
	if err != nil || cfg.Confine.Off {
		return false
	}
	return confine.Probe(confine.Spec{Writable: []string{"/"}}).Landlock > 0
}

// ExecArgs is args, a command a person runs in run r (tine exec), as it
// runs there, and a note to show them: codex in a fork whose writes tine
// confines runs without its own sandbox, which cannot start there
// (agent.CodexInConfinedFork).
func (m *Manager) ExecArgs(ctx context.Context, r engine.Ref, args []string) ([]string, string) {
	out, note := agent.CodexInConfinedFork(args)
	if note == "" || !m.ConfinesWrites(ctx, r.Run.ID) {
		return args, ""
	}
	return out, fmt.Sprintf("fork %s: %s", r.Run.Name, note)
}

// ScratchDir is run r's own scratch directory, for work tine does in the
// run outside its files (its tests on the fork point, rivals' tests on its
// code): inside the run's directory, so the run sees it, and writable by
// the run's processes.
func (m *Manager) ScratchDir(r engine.Ref) string {
	return m.lay.Run(r.Workspace.ID, r.Run.ID).Scratch()
}

// Sandboxed is how tine exec's sandbox (without root, without the
// daemon) runs a command of a run, as its supervisor would (Unsupervised).
type Sandboxed struct {
	// Confine is Landlock and seccomp; Hide the mounts that hide the state
	// directory, the other workspaces and what a fork-run hid, and give a
	// fork its own /tmp and home, on tmpfs for the one command
	// (Hide.Ephemeral), their layers below the run's scratch directory.
	// Both nil with [confine] off.
	Confine *confine.Spec
	Hide    *supervisor.Hide
	// Env is the command's environment without the secrets a fork does
	// not get.
	Env []string
	// Net is the network of its own a fork gets (sandboxNet); nil: the
	// host's, and for a fork that would have one under the daemon,
	// HostNetWhy says why it has not.
	Net        *netproxy.Proxy
	HostNetWhy string

	m        *Manager
	r        engine.Ref
	fallback bool // [network] sandbox_fallback is not "refuse"
	serving  bool // Started wrote the policy
	covered  bool // Covered wrote the confinement
}

// Unsupervised is how tine exec without root, which runs a command in a
// sandbox of its own instead of through a supervisor, confines a process
// of run r started with env as r's supervisor would; r's configuration is
// read once for all of it.
func (m *Manager) Unsupervised(ctx context.Context, r engine.Ref, env []string) (*Sandboxed, error) {
	cfg, err := m.eng.Config(ctx, r)
	if err != nil {
		return nil, err
	}
	out := &Sandboxed{Env: env, m: m, r: r, fallback: cfg.Network.FallsBackToHost()}
	p := secretsPolicy(r, cfg)
	if p != nil {
		out.Env, _ = p.Strip(env, nil)
	}
	out.Confine, out.Hide = m.confinement(ctx, r, cfg)
	if out.Confine != nil && r.Run.Role == tine.RoleFork {
		// No pid namespace of its own here, nor always a network one: the
		// owner's other processes are in reach of its signals, the
		// session's abstract sockets of its connects.
		out.Confine.Scoped = true
	}
	if out.Hide != nil && p != nil {
		out.Hide.Secrets = p.Files
	}
	if out.Hide != nil {
		out.Hide.Ephemeral, out.Hide.Scratch = true, m.ScratchDir(r)
		if err := os.MkdirAll(m.ScratchDir(r), 0o700); err != nil {
			return nil, err
		}
	}
	if out.Net, err = m.sandboxNet(r, cfg, out.Env); err != nil {
		return nil, err
	}
	if out.Net == nil && r.Run.Role == tine.RoleFork && cfg.Network.Own(r.Run.Role) {
		out.HostNetWhy = `fork_egress = "open"` // the only way sandboxNet leaves a fork of its own network on the host's
	}
	return out, nil
}
