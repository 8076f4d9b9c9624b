// Package secrets keeps a run's secrets out of its forks: environment
// variables whose names say they hold credentials, and files that do, named
// by tine.toml's [secrets] or by the defaults here. A fork's processes get
// none of them unless the policy lets forks inherit one, or the fork's
// account provides its own.
package secrets

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tinehq/tine/internal/account"
)

// Policy says which variables and files are secrets. Env holds variable
// names or glob patterns (path.Match: "*_TOKEN"), Files absolute paths
// (directories hide everything below them), Inherit the names of variables
// and paths of files that forks keep even so.
type Policy struct {
	Env     []string `json:"env"`
	Files   []string `json:"files"`
	Inherit []string `json:"inherit,omitempty"`
}

// DefaultEnv are the variables forks never get unless inherited: the
// shapes of credentials and the common ones by name, and the ssh agent.
var DefaultEnv = []string{
	"*_TOKEN", "*_SECRET", "*_SECRET_*", "*_PASSWORD", "*_PASSWD", "*_API_KEY", "*_PRIVATE_KEY", "*_CREDENTIALS",
	"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "GITHUB_TOKEN", "GH_TOKEN", "NPM_TOKEN", "SSH_AUTH_SOCK",
}

// DefaultInherit are the agents' own credentials: the agents tine drives
// in forks need them, and an [[account]] replaces them per fork.
var DefaultInherit = []string{
	"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "OPENAI_API_KEY", "CODEX_API_KEY",
}

// DefaultFiles are credential files and directories in the owner's home,
// relative to it: the ssh keys, the clouds' and GitHub's, and the
// publishing tokens of the package registries the egress preset opens to a
// fork (npm's, PyPI's, crates.io's, RubyGems'), which would let an agent
// publish a package, an external effect no person approved.
var DefaultFiles = []string{".ssh", ".aws", ".config/gh", ".netrc", ".git-credentials", ".docker/config.json",
	".npmrc", ".yarnrc.yml", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml", ".gem/credentials",
	".config/gcloud", ".azure", ".kube/config", ".pgpass"}

// Secret reports whether the variable name is a secret forks do not get.
func (p Policy) Secret(name string) bool {
	return p.shaped(name) && !slices.Contains(p.Inherit, name)
}

// shaped reports whether name matches one of the secret patterns.
func (p Policy) shaped(name string) bool {
	return slices.ContainsFunc(p.Env, func(pat string) bool {
		ok, _ := path.Match(pat, name)
		return ok
	})
}

// Strip returns env without the secret variables, except those granted
// (provided for this process by its account), and the names it left out.
func (p Policy) Strip(env []string, granted []string) (out, withheld []string) {
	out = make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if p.Secret(name) && !slices.Contains(granted, name) {
			if !slices.Contains(withheld, name) {
				withheld = append(withheld, name)
			}
			continue
		}
		out = append(out, kv)
	}
	return out, withheld
}

// Inherited returns the names of env's variables that match the secret
// patterns but are inherited: what a fork had of its parent's secrets.
func (p Policy) Inherited(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(p.Inherit, name) && p.shaped(name) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// Hidden returns the secret files to hide, as absolute paths: files given
// relative are taken from dir (the workspace path), "~/" from home, and
// inherited ones are left out.
func (p Policy) Hidden(home, dir string) []string {
	resolve := func(f string) string {
		switch {
		case strings.HasPrefix(f, "~/"):
			f = filepath.Join(home, f[2:])
		case !filepath.IsAbs(f):
			f = filepath.Join(dir, f)
		}
		return filepath.Clean(f)
	}
	var kept []string // inherited files, written as Files are ("~/.npmrc", ".env", "/etc/key")
	for _, f := range p.Inherit {
		if strings.ContainsAny(f, "/~.") {
			kept = append(kept, resolve(f))
		}
	}
	var out []string
	for _, f := range p.Files {
		f = resolve(f)
		if !slices.Contains(kept, f) && !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// DefaultSystemFiles are the host's own credential files, hidden from
// forks with the defaults: the password hashes, sudo's rules and sshd's
// host keys (matched by pattern).
var DefaultSystemFiles = []string{"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
	"/etc/sudoers", "/etc/sudoers.d", "/etc/ssh/ssh_host_*_key"}

// SystemFiles returns the credential files a fork of a workspace owned by
// the user whose home is ownerHome must not read beyond its owner's:
// DefaultSystemFiles that exist, and DefaultFiles in every other home of
// users (the password database's entries, account.Users). Root's forks
// could read them all; a normal user's cannot anyway, so hiding them costs
// it nothing.
func SystemFiles(users []account.User, ownerHome string) []string {
	var out []string
	add := func(p string) {
		if _, err := os.Lstat(p); err == nil && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, f := range DefaultSystemFiles {
		matches, _ := filepath.Glob(f) // a name without a pattern matches itself when it exists
		for _, m := range matches {
			add(m)
		}
	}
	for _, u := range users {
		home := filepath.Clean(u.Home)
		if !filepath.IsAbs(home) || home == "/" || home == filepath.Clean(ownerHome) {
			continue
		}
		for _, f := range DefaultFiles {
			add(filepath.Join(home, f))
		}
	}
	return out
}
