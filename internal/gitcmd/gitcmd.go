// Package gitcmd runs git for tine on repositories tine does not trust: a
// run's, whose configuration a fork's processes wrote, and a normal user's,
// which the root daemon reads on their behalf. git takes commands to run
// from a repository's configuration (filters, diff and merge drivers,
// fsmonitor, hooks, signing and credential programs...); tine's git must
// never run them, on the host, as tine.
//
// Two layers keep it so. Env gives git no system or global configuration
// and no variables of the caller's; Config, on every command line,
// overrides each key of a repository's configuration that git executes
// and that a command tine runs could reach. A command that needs no more of
// a repository than its objects and files runs with a private git
// directory besides (see the merge planner's shadow repository), so the
// repository's configuration is not read at all.
package gitcmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// Config is the configuration given on every git command line: it turns
// off whatever a repository's configuration could make git run, and keeps
// git from writing anything it was not asked to. Keys that name a driver
// (filter.NAME.clean, diff.NAME.textconv, merge.NAME.driver) cannot be
// overridden by name here: commands that meet attributes run without the
// repository's configuration.
var Config = []string{
	"-c", "safe.directory=*",
	"-c", "core.fsmonitor=false",
	"-c", "core.hooksPath=/dev/null",
	"-c", "core.sshCommand=",
	"-c", "core.askPass=",
	"-c", "core.alternateRefsCommand=",
	"-c", "core.pager=cat",
	"-c", "core.editor=:",
	"-c", "sequence.editor=:",
	"-c", "credential.helper=",
	"-c", "diff.external=",
	"-c", "gpg.program=",
	"-c", "gpg.ssh.program=",
	"-c", "gpg.x509.program=",
	"-c", "commit.gpgSign=false",
	"-c", "tag.gpgSign=false",
	"-c", "log.showSignature=false",
	"-c", "protocol.ext.allow=never",
	"-c", "core.untrackedCache=false",
	"-c", "gc.auto=0",
	"-c", "maintenance.auto=false",
}

// Env returns the environment for git: the process's without any GIT_
// variable (which could point git at another repository or configuration),
// in the C locale (messages are parsed), with no system or global
// configuration, no prompts, and no replacement objects, plus extra.
func Env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") && !strings.HasPrefix(kv, "SSH_ASKPASS=") {
			env = append(env, kv)
		}
	}
	env = append(env, "LC_ALL=C", "LANGUAGE=C",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_ATTR_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0", "GIT_NO_REPLACE_OBJECTS=1", "GIT_NO_LAZY_FETCH=1",
		"GIT_ALLOW_PROTOCOL=file", "GIT_PROTOCOL_FROM_USER=0")
	return append(env, extra...)
}

// Command returns git with Config, then extra configuration, then args,
// to run in dir with env (Env() when nil).
func Command(ctx context.Context, dir string, env, extra []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "git", slices.Concat(Config, extra, args)...)
	cmd.Dir, cmd.Env = dir, env
	if env == nil {
		cmd.Env = Env()
	}
	return cmd
}

// Error is a git command that failed, with what it printed on stderr.
type Error struct {
	Args   []string // the first arguments, naming the command
	Stderr string
	Err    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("git %s: %v: %s", strings.Join(e.Args, " "), e.Err, strings.TrimSpace(e.Stderr))
}

func (e *Error) Unwrap() error { return e.Err }

// Run runs git as Command does, with stdin when not nil, and returns its
// standard output; a failure is an *Error.
func Run(ctx context.Context, dir string, env, extra []string, stdin []byte, args ...string) ([]byte, error) {
	cmd := Command(ctx, dir, env, extra, args...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), &Error{Args: args[:min(len(args), 3)], Stderr: stderr.String(), Err: err}
	}
	return stdout.Bytes(), nil
}

// Drivers returns configuration that turns off every filter, diff driver
// and merge driver the configuration of the repository at dir defines
// (each by its name, which Config cannot know), for commands that must
// open that repository: a write of its index, for one, re-hashes racily
// clean files through their clean filter.
func Drivers(ctx context.Context, dir string) ([]string, error) {
	out, err := Run(ctx, dir, nil, nil, nil, "config", "-z", "--list")
	if err != nil {
		return nil, err
	}
	off := map[string][]string{
		"filter": {"clean=", "smudge=", "process=", "required=false"},
		"diff":   {"textconv=", "command=", "cachetextconv=false"},
		"merge":  {"driver=false"},
	}
	var extra []string
	seen := map[string]bool{}
	for _, kv := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		k, _, _ := strings.Cut(kv, "\n")
		sec, rest, ok := strings.Cut(k, ".")
		i := strings.LastIndexByte(rest, '.')
		if !ok || i < 0 || off[strings.ToLower(sec)] == nil {
			continue
		}
		name := strings.ToLower(sec) + "." + rest[:i]
		if seen[name] {
			continue
		}
		seen[name] = true
		for _, o := range off[strings.ToLower(sec)] {
			extra = append(extra, "-c", name+"."+o)
		}
	}
	return extra, nil
}
