package hook

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"github.com/tinehq/tine/classify"
)

// TestHandle_HostRun: outside every run, a hook whose Host finds a run
// for the event's working directory decides as inside that run (a git push
// is denied); a directory no run manages is left alone.
func TestHandle_HostRun(t *testing.T) {
	var asked []string
	env := Env{Host: func(_ context.Context, dir string) (Env, bool) {
		asked = append(asked, dir)
		if strings.HasPrefix(dir, "/ws") {
			return Env{Run: "app/source"}, true
		}
		return Env{}, false
	}}
	ev := []byte(`{"hook_event_name":"PreToolUse","session_id":"s","cwd":"/ws/sub","tool_name":"Bash","tool_input":{"command":"git push origin main"}}`)
	a := Handle(context.Background(), Claude, ev, env)
	if a.Response.Action != Deny || !strings.Contains(string(a.Output.Stdout), `"permissionDecision":"deny"`) {
		t.Errorf("in a workspace: %+v %s", a.Response, a.Output.Stdout)
	}
	if len(asked) != 1 || asked[0] != "/ws/sub" {
		t.Errorf("Host asked for %q, want the event's cwd", asked)
	}
	other := []byte(strings.Replace(string(ev), "/ws/sub", "/elsewhere", 1))
	if a := Handle(context.Background(), Claude, other, env); a.Response.Action != Pass || len(a.Output.Stdout) != 0 {
		t.Errorf("elsewhere: %+v", a.Response)
	}
	// Inside a run the run's own environment wins; Host is not asked.
	asked = nil
	in := env
	in.Run, in.Role = "app/source-1", classify.Fork
	if a := Handle(context.Background(), Claude, ev, in); a.Response.Action != Deny || len(asked) != 0 {
		t.Errorf("inside: %+v, Host asked %q", a.Response, asked)
	}
}

// TestCodexTrustHash: the hash is the one the real codex 0.171 reports
// as currentHash (codex app-server, hooks/list) for tine's PreToolUse
// handler.
func TestCodexTrustHash(t *testing.T) {
	const want = "sha256:f85fecdb3bdefb804b227a75d2a447a56043cdd81f3e70ea94a3eb7665a7807a"
	if got := CodexTrustHash("PreToolUse", "Bash", "tine hook codex", 10); got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	if CodexTrustHash("Stop", "", "tine hook codex", 10) == CodexTrustHash("Stop", "", "/bin/tine hook codex", 10) {
		t.Error("the command does not change the hash")
	}
}

// TestInstall_CodexTrust: installing into a config.toml that already has
// hooks marks each of tine's handlers trusted under the key Codex uses
// (PATH:EVENT:GROUP:HANDLER, counting the user's entries before it); an
// old install without trust is brought up to date; removing takes the
// trust entries with it.
func TestInstall_CodexTrust(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.toml")
	user := "model = \"m\"\n\n[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = \"command\"\ncommand = \"notify\"\n"
	old, _, err := Merge(Codex, []byte(user), "tine hook codex") // no trust
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, old, 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := Install(Codex, path, "tine"); err != nil || !changed {
		t.Fatalf("install: %v %v", changed, err)
	}
	doc, _ := os.ReadFile(path)
	var c struct {
		Hooks struct {
			State map[string]struct {
				TrustedHash string `toml:"trusted_hash"`
			} `toml:"state"`
		} `toml:"hooks"`
	}
	if err := toml.Unmarshal(doc, &c); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		path + ":pre_tool_use:0:0":       CodexTrustHash("PreToolUse", "Bash", "tine hook codex", HookTimeout),
		path + ":post_tool_use:0:0":      CodexTrustHash("PostToolUse", "Bash", "tine hook codex", HookTimeout),
		path + ":user_prompt_submit:0:0": CodexTrustHash("UserPromptSubmit", "", "tine hook codex", HookTimeout),
		path + ":stop:1:0":               CodexTrustHash("Stop", "", "tine hook codex", HookTimeout),
	}
	if len(c.Hooks.State) != len(want) {
		t.Errorf("state %+v", c.Hooks.State)
	}
	for k, h := range want {
		if c.Hooks.State[k].TrustedHash != h {
			t.Errorf("%s: trusted_hash %q, want %q\n%s", k, c.Hooks.State[k].TrustedHash, h, doc)
		}
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	if changed, err := Install(Codex, path, "tine"); err != nil || changed {
		t.Errorf("second install: %v %v", changed, err)
	}
	if changed, err := Uninstall(Codex, path); err != nil || !changed {
		t.Fatalf("uninstall: %v %v", changed, err)
	}
	if doc, _ := os.ReadFile(path); string(doc) != user {
		t.Errorf("after uninstall:\n%s", doc)
	}
}

// TestSettingsPath_CodexHome: Codex's user config is in CODEX_HOME when
// it is set.
func TestSettingsPath_CodexHome(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CODEX_HOME", dir)
	if p, err := SettingsPath(Codex, ""); err != nil || p != filepath.Join(dir, "config.toml") {
		t.Errorf("got %q %v", p, err)
	}
	if p, _ := SettingsPath(Codex, "/proj"); p != "/proj/.codex/config.toml" {
		t.Errorf("project: %q", p)
	}
	t.Setenv("CODEX_HOME", "")
	home, _ := os.UserHomeDir()
	if p, _ := SettingsPath(Codex, ""); p != filepath.Join(home, ".codex", "config.toml") {
		t.Errorf("default: %q", p)
	}
}

// TestInstall_CodexMCP: installing for Codex also defines tine's MCP
// server, given the run's socket and capability, with its effect tool
// approved, next to the user's own servers; a file with its own server
// named tine, or mcp_servers written inline (which a table cannot
// extend), gets the hooks without it; removing takes it away.
func TestInstall_CodexMCP(t *testing.T) {
	type server struct {
		Command string   `toml:"command"`
		Args    []string `toml:"args"`
		EnvVars []string `toml:"env_vars"`
		Tools   map[string]struct {
			ApprovalMode string `toml:"approval_mode"`
		} `toml:"tools"`
	}
	for _, c := range []struct {
		name, user string
		want       string // the tine server's command, "" for the user's own or none
	}{
		{"beside the user's", "[mcp_servers.docs]\ncommand = \"docs-mcp\"\n", "/opt/tine bin/tine"},
		{"the user's own tine", "[mcp_servers.tine]\ncommand = \"my-tine\"\n", ""},
		{"inline", "mcp_servers = { docs = { command = \"docs-mcp\" } }\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.toml")
			if err := os.WriteFile(path, []byte(c.user), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := Install(Codex, path, "/opt/tine bin/tine"); err != nil {
				t.Fatal(err)
			}
			doc, _ := os.ReadFile(path)
			var cfg struct {
				MCP map[string]server `toml:"mcp_servers"`
			}
			if err := toml.Unmarshal(doc, &cfg); err != nil {
				t.Fatalf("%v\n%s", err, doc)
			}
			if n, _ := decodeCodex(doc); n != len(specs[Codex]) {
				t.Errorf("%d of tine's hooks, want %d\n%s", n, len(specs[Codex]), doc)
			}
			s := cfg.MCP[CodexMCPServer]
			switch {
			case c.want != "" && (s.Command != c.want || !slices.Equal(s.Args, []string{"mcp"}) ||
				!slices.Equal(s.EnvVars, []string{"TINE_SOCKET", "TINE_CAPABILITY"}) || s.Tools["effect"].ApprovalMode != "approve"):
				t.Errorf("tine's server %+v\n%s", s, doc)
			case c.want == "" && strings.Count(string(doc), "[mcp_servers.tine") > strings.Count(c.user, "[mcp_servers.tine"):
				t.Errorf("a second tine server:\n%s", doc)
			}
			if cfg.MCP["docs"].Command == "" && !strings.Contains(c.name, "tine") {
				t.Errorf("the user's server is gone:\n%s", doc)
			}
			if _, err := Uninstall(Codex, path); err != nil {
				t.Fatal(err)
			}
			if doc, _ := os.ReadFile(path); string(doc) != c.user {
				t.Errorf("after uninstall:\n%s", doc)
			}
		})
	}
}
