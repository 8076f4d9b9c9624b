package runtime

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/cgroup"
	"github.com/tinehq/tine/config"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/account"
	"github.com/tinehq/tine/secrets"
)

// secretsPolicy is what fork r's processes must not get, with its files
// made absolute (the owner's home for "~/", the workspace path for a
// relative one); nil for a source, whose secrets are its own.
func secretsPolicy(r engine.Ref, cfg *config.Config) *secrets.Policy {
	if r.Run.Role != tine.RoleFork {
		return nil
	}
	p := cfg.Secrets.Policy()
	home := engine.OwnerAccount(r.Workspace).Home
	p.Files = p.Hidden(home, r.Workspace.Path)
	if cfg.Secrets.Defaults == nil || *cfg.Secrets.Defaults {
		for _, f := range secrets.SystemFiles(account.Users(), home) {
			if !slices.Contains(p.Files, f) && !slices.Contains(p.Inherit, f) {
				p.Files = append(p.Files, f)
			}
		}
	}
	return &p
}

// secretsEvidence says which of env's secrets a fork's processes get
// (inherited) and which they do not (withheld), and which files are hidden;
// it goes in the run's start event.
func secretsEvidence(p *secrets.Policy, env []string) map[string]any {
	_, withheld := p.Strip(env, nil)
	ev := map[string]any{"withheld": withheld, "inherited": p.Inherited(env)}
	var hidden []string
	for _, f := range p.Files {
		if _, err := os.Lstat(f); err == nil {
			hidden = append(hidden, f)
		}
	}
	ev["hidden_files"] = hidden
	return ev
}

// refuseSecretLiveFork refuses to fork p's processes live (their memory
// and environment go into the forks) while one of them holds a secret of
// p's policy in its environment, unless allowed. The run's supervisor is
// not one of them: it is tine's, started from the daemon's environment,
// and never forked.
func (m *Manager) refuseSecretLiveFork(ctx context.Context, p engine.Ref, allowed bool) error {
	if allowed {
		return nil
	}
	cfg, err := m.eng.Config(ctx, p)
	if err != nil {
		return err
	}
	policy := cfg.Secrets.Policy()
	cg, err := cgroup.Load(p.Run.ID)
	if err != nil {
		return nil // nothing runs: nothing to carry
	}
	_, sup := m.ProcState(p)
	pids, _ := cg.Procs()
	for _, pid := range pids {
		if pid == sup {
			continue // tine's own supervisor: never carried into a fork
		}
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(b, []byte{0}) {
			name, _, _ := bytes.Cut(kv, []byte("="))
			if len(name) > 0 && policy.Secret(string(name)) {
				return fmt.Errorf("process %d of %s holds the secret %s in its environment, and a live fork would copy it into every fork: "+
					"fork with another live mode, or allow it (%s): %w", pid, p.Run.Name, name, tine.Opt("allow_secrets"), tine.ErrState)
			}
		}
	}
	return nil
}
