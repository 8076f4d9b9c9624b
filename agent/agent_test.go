package agent

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCommand(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		prompt   string
		approach string
		session  string
		want     []string
	}{
		{"claude", Config{Kind: Claude}, "fix it", "", "",
			slices.Concat([]string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages"},
				ClaudePermissions(false), []string{"--", "fix it"})},
		{"claude fork session", Config{Kind: Claude, Binary: "/opt/claude", Model: "opus", Args: []string{"--permission-mode", "acceptEdits"}},
			"fix it", "small patch", "sess-1",
			[]string{"/opt/claude", "-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages", "--model", "opus",
				"--resume", "sess-1", "--fork-session", "--permission-mode", "acceptEdits", "--",
				"fix it\n\nApproach for this attempt: small patch"}},
		{"claude dash prompt", Config{Kind: Claude}, "-x", "", "",
			slices.Concat([]string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages"},
				ClaudePermissions(false), []string{"--", "-x"})},
		{"codex", Config{Kind: Codex}, "fix it", "", "",
			[]string{"codex", "exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check", "fix it"}},
		{"codex fork session", Config{Kind: Codex, Model: "gpt-5", Args: []string{"--skip-git-repo-check"}}, "fix it", "", "th-1",
			[]string{"codex", "exec", "--json", "--model", "gpt-5", "--sandbox", "workspace-write", "--skip-git-repo-check", "fork", "th-1", "fix it"}},
		{"codex dash prompt", Config{Kind: Codex}, "-x", "", "",
			[]string{"codex", "exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check", "--", "-x"}},
		{"command args", Config{Kind: CommandKind, Args: []string{"sh", "-c", "echo hi"}}, "p", "a", "s",
			[]string{"sh", "-c", "echo hi"}},
		{"command binary", Config{Kind: CommandKind, Binary: "./agent.sh", Args: []string{"-v"}}, "p", "a", "",
			[]string{"./agent.sh", "-v"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Command(tt.cfg, tt.prompt, tt.approach, tt.session)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("Command = %q, %v\nwant %q", got, err, tt.want)
			}
		})
	}
}

func TestCommand_Errors(t *testing.T) {
	tests := []struct {
		cfg  Config
		want error
	}{
		{Config{Kind: CommandKind}, ErrNoCommand},
		{Config{Kind: "gemini"}, ErrUnknownKind},
		{Config{}, ErrUnknownKind},
	}
	for _, tt := range tests {
		if _, err := Command(tt.cfg, "p", "", ""); !errors.Is(err, tt.want) {
			t.Errorf("%+v: err %v, want %v", tt.cfg, err, tt.want)
		}
		if err := Check(tt.cfg, os.Getenv("PATH")); !errors.Is(err, tt.want) {
			t.Errorf("Check %+v: err %v, want %v", tt.cfg, err, tt.want)
		}
	}
}

func TestEnv(t *testing.T) {
	got := Env("fix it", "small", "fork-2", 2)
	want := []string{"TINE_PROMPT=fix it", "TINE_APPROACH=small", "TINE_RUN=fork-2", "TINE_FORK_INDEX=2"}
	if !slices.Equal(got, want) {
		t.Errorf("Env = %q, want %q", got, want)
	}
}

func TestCheck(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	if err := Check(Config{Kind: Claude, Binary: self}, empty); err != nil {
		t.Errorf("existing binary: %v", err)
	}
	// Looked up on the PATH given (the caller's), not this process's.
	callers := t.TempDir()
	if err := os.Symlink(self, filepath.Join(callers, "claude")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", empty)
	if err := Check(Config{Kind: Claude}, empty+":"+callers); err != nil {
		t.Errorf("claude on the caller's PATH: %v", err)
	}
	for _, cfg := range []Config{{Kind: Claude}, {Kind: Codex, Binary: "codex-missing"}, {Kind: CommandKind, Args: []string{"/nonexistent/agent"}}} {
		err := Check(cfg, empty)
		if !errors.Is(err, ErrNotFound) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: err %v, want a one-line ErrNotFound", cfg, err)
		}
	}
}

func TestParseKind(t *testing.T) {
	for _, s := range []string{"claude", "codex", " command "} {
		if _, err := ParseKind(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	if _, err := ParseKind("aider"); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("aider: %v", err)
	}
}
