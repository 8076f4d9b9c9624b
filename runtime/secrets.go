package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"time"

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
	pids, err := cg.Procs()
	if errors.Is(err, fs.ErrNotExist) {
		return nil // the group went with its processes
	}
	if err != nil {
		return fmt.Errorf("checking %s's processes for secrets before a live fork: %w", p.Run.Name, err)
	}
	for _, pid := range pids {
		if pid == sup {
			continue // tine's own supervisor: never carried into a fork
		}
		if name := heldSecret(pid, policy.Secret, readEnviron); name != "" {
			return fmt.Errorf("process %d of %s holds the secret %s in its environment, and a live fork would copy it into every fork: "+
				"fork with another live mode, or allow it (%s): %w", pid, p.Run.Name, name, tine.Opt("allow_secrets"), tine.ErrState)
		}
	}
	return nil
}

// environRetries bounds how often heldSecret reads an empty environment
// again, environRetryWait apart.
const (
	environRetries   = 50
	environRetryWait = 2 * time.Millisecond
)

// heldSecret returns the first variable of pid's environment that secret
// says is one, or "". A process caught inside execve (a service's "sh -c
// 'exec server'" just started) shows an empty environment until the new
// program's stack is set up, so an empty one is read again for a while
// before it is believed; a process gone holds nothing.
func heldSecret(pid int, secret func(string) bool, read func(int) ([]byte, error)) string {
	for try := 0; ; try++ {
		b, err := read(pid)
		if err != nil {
			return ""
		}
		if len(b) == 0 && try < environRetries {
			time.Sleep(environRetryWait)
			continue
		}
		for _, kv := range bytes.Split(b, []byte{0}) {
			name, _, _ := bytes.Cut(kv, []byte("="))
			if len(name) > 0 && secret(string(name)) {
				return string(name)
			}
		}
		return ""
	}
}

// readEnviron reads /proc/PID/environ.
func readEnviron(pid int) ([]byte, error) {
	return os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
}
