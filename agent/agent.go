package agent

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Kind names an agent adapter.
type Kind string

// The agent adapters.
const (
	// Claude is Claude Code in headless mode (claude -p, stream-json).
	Claude Kind = "claude"
	// Codex is the OpenAI Codex CLI (codex exec --json).
	Codex Kind = "codex"
	// CommandKind is any program; its stdout is plain text with optional
	// {"tine_cost_usd": X} lines.
	CommandKind Kind = "command"
)

// Environment variables given to every agent process by [Env].
const (
	EnvPrompt    = "TINE_PROMPT"
	EnvApproach  = "TINE_APPROACH"
	EnvRun       = "TINE_RUN"
	EnvForkIndex = "TINE_FORK_INDEX"
)

// Sentinel errors; test with errors.Is.
var (
	// ErrUnknownKind is returned for a Kind that is not claude, codex or command.
	ErrUnknownKind = errors.New("unknown agent kind")
	// ErrNoCommand is returned when a command agent has no program to run.
	ErrNoCommand = errors.New("command agent has no program")
	// ErrNotFound is returned by [Check] when the agent binary is missing.
	ErrNotFound = errors.New("agent binary not found")
)

// Config is one agent's configuration, as read from tine.toml.
type Config struct {
	// Kind selects the adapter.
	Kind Kind
	// Binary is the program to run; empty means "claude" or "codex". For
	// the command kind an empty Binary means Args[0] is the program.
	Binary string
	// Args are extra arguments, placed before the prompt (claude, codex)
	// or forming the whole command line (command).
	Args []string
	// Model is passed as --model to claude and codex when set; it also
	// selects the price for Codex usage.
	Model string
	// Confined says tine already limits what the agent may write (Landlock
	// in a fork): codex then runs without a sandbox of its own, which
	// cannot work beneath Landlock (bubblewrap mounts).
	Confined bool
	// Root says the agent runs as root (the workspace's owner is root),
	// where Claude refuses bypassPermissions: see [ClaudePermissions].
	Root bool
}

// ParseKind turns a config or flag value into a Kind.
func ParseKind(s string) (Kind, error) {
	switch k := Kind(strings.TrimSpace(s)); k {
	case Claude, Codex, CommandKind:
		return k, nil
	}
	return "", fmt.Errorf("agent %q: %w (want claude, codex or command)", s, ErrUnknownKind)
}

// binary returns the program cfg runs.
func (cfg Config) binary() (string, error) {
	if cfg.Binary != "" {
		return cfg.Binary, nil
	}
	switch cfg.Kind {
	case Claude, Codex:
		return string(cfg.Kind), nil
	case CommandKind:
		if len(cfg.Args) == 0 || cfg.Args[0] == "" {
			return "", ErrNoCommand
		}
		return cfg.Args[0], nil
	}
	return "", fmt.Errorf("agent %q: %w", cfg.Kind, ErrUnknownKind)
}

// Check reports, in one line, why cfg's agent cannot run: an unknown kind,
// a command agent without a program, or a binary not found on path, the
// PATH the agent is started with (the caller's, not this process's).
func Check(cfg Config, path string) error {
	bin, err := cfg.binary()
	if err != nil {
		return err
	}
	if _, err := LookPath(bin, path); err != nil {
		return fmt.Errorf("%s agent: %w: %q (%v)", cfg.Kind, ErrNotFound, bin, err)
	}
	return nil
}

// LookPath finds the executable file bin as a shell with PATH path would:
// bin itself when it holds a slash, else the first directory of path that
// has it.
func LookPath(bin, path string) (string, error) {
	if strings.Contains(bin, "/") {
		return bin, executable(bin)
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		if p := filepath.Join(dir, bin); executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("not on PATH %s", path)
}

// executable reports why p is not an executable file, if it is not.
func executable(p string) error {
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return err
	case fi.IsDir() || fi.Mode()&0o111 == 0:
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}

// Prompt joins the task prompt and a fork's approach into the text given
// to claude and codex. An empty approach leaves the prompt unchanged.
func Prompt(prompt, approach string) string {
	if strings.TrimSpace(approach) == "" {
		return prompt
	}
	return prompt + "\n\nApproach for this attempt: " + approach
}

// Command builds the argv of one agent run. session, when not empty,
// continues an earlier conversation: Claude resumes it with
// --fork-session (a new session id, the original left untouched); Codex
// forks it with exec fork (a new session, the original left untouched).
// The command kind ignores prompt, approach and session: it reads them
// from [Env].
//
// Claude: claude -p --output-format stream-json --verbose [--model M]
// [--resume S --fork-session] [PERMISSIONS] ARGS... -- PROMPT, where
// PERMISSIONS are tine's defaults unless ARGS set a permission mode (see
// [ClaudePermissions]). Codex: see [CodexArgv].
func Command(cfg Config, prompt, approach, session string) ([]string, error) {
	bin, err := cfg.binary()
	if err != nil {
		return nil, err
	}
	text := Prompt(prompt, approach)
	switch cfg.Kind {
	case Claude:
		return claudeArgv(bin, cfg, text, session), nil
	case Codex:
		return codexArgv(bin, cfg, text, session), nil
	case CommandKind:
		return commandArgv(bin, cfg), nil
	}
	return nil, fmt.Errorf("agent %q: %w", cfg.Kind, ErrUnknownKind)
}

func commandArgv(bin string, cfg Config) []string {
	if cfg.Binary == "" {
		return append([]string(nil), cfg.Args...)
	}
	return append([]string{bin}, cfg.Args...)
}

// Env returns the variables every agent process gets, to be appended to
// its environment: TINE_PROMPT, TINE_APPROACH, TINE_RUN and
// TINE_FORK_INDEX (0-based).
func Env(prompt, approach, run string, forkIndex int) []string {
	return []string{
		EnvPrompt + "=" + prompt,
		EnvApproach + "=" + approach,
		EnvRun + "=" + run,
		EnvForkIndex + "=" + strconv.Itoa(forkIndex),
	}
}
