package forkrun

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/account"
	"github.com/tinehq/tine/secrets"
)

// agentSecrets decides what of env, the environment the forks' agents
// start from, crosses into them: the variables the agent authenticates
// with (agent.Credentials) are passed, as ANTHROPIC_API_KEY is, unless
// [secrets] env names them; every other secret is withheld. It returns
// the variables passed (NAME=VALUE, to add to the agent's environment,
// which grants them) and the names withheld.
func agentSecrets(o *Options, env []string) (pass, withheld []string) {
	policy := o.Secrets.Policy()
	declared := secrets.Policy{Env: o.Secrets.Env} // the file's own, without the defaults
	granted := envNames(o.AgentEnv)
	for _, acc := range o.Accounts {
		granted = append(granted, envNames(acc.Environ())...)
	}
	for _, name := range agent.Credentials(o.Agent, env) {
		v := account.Getenv(env, name)
		if v == "" || !policy.Secret(name) || declared.Secret(name) {
			continue
		}
		pass = append(pass, name+"="+v)
		granted = append(granted, name)
	}
	_, withheld = policy.Strip(env, granted)
	return pass, withheld
}

// envNames returns the names of env's variables.
func envNames(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		out = append(out, name)
	}
	return out
}

// withheldHint adds to why, an agent's failure, the withheld variables it
// may have needed, and the [secrets] inherit line that passes them: those
// output (its stderr and result) names, else all of them, at most five.
func withheldHint(why, output string, withheld []string) string {
	if len(withheld) == 0 {
		return why
	}
	var named []string
	for _, name := range withheld {
		if strings.Contains(output, name) {
			named = append(named, name)
		}
	}
	how := "needed"
	if len(named) == 0 {
		named, how = withheld[:min(len(withheld), 5)], "may have needed"
	}
	quoted := make([]string, len(named))
	for i, n := range named {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	return fmt.Sprintf("%s; tine withheld %s from the agent as secret, which it %s: to pass it, add [secrets] inherit = [%s] to tine.toml",
		why, strings.Join(named, ", "), how, strings.Join(quoted, ", "))
}

// hiddenCredentialNotes say which files the agent authenticates with
// (agent.CredentialFiles) the forks do not see, and the [secrets] inherit
// line that shows them; home is the owner's, dir the workspace path.
func hiddenCredentialNotes(o *Options, env []string, home, dir string) []string {
	policy := o.Secrets.Policy()
	hidden := policy.Hidden(home, dir)
	var notes []string
	for _, f := range agent.CredentialFiles(o.Agent, env) {
		abs := f
		if rest, ok := strings.CutPrefix(f, "~/"); ok {
			abs = filepath.Join(home, rest)
		}
		if slices.ContainsFunc(hidden, func(h string) bool { return fstree.Within(abs, h) || abs == h }) {
			notes = append(notes, fmt.Sprintf("%s authenticates with %s, which tine hides from forks as a secret: to show it, add [secrets] inherit = [%q] to tine.toml",
				o.Agent.Kind, f, f))
		}
	}
	return notes
}
