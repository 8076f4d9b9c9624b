package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSetupCommand(t *testing.T) {
	for _, agent := range []string{"claude", "codex"} {
		t.Run(agent, func(t *testing.T) {
			dir := t.TempDir()
			out, errOut, code := runStdin(t, "", "setup", agent, "--project", dir)
			if code != 0 || !strings.Contains(out, "added") {
				t.Fatalf("install: %d %q %q", code, out, errOut)
			}
			out, _, code = runStdin(t, "", "setup", agent, "--project", dir)
			if code != 0 || !strings.Contains(out, "already") {
				t.Errorf("second install: %d %q", code, out)
			}
			out, _, code = runStdin(t, "", "setup", agent, "--project", dir, "--remove", "--json")
			var res setupResult
			if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || !res.Changed || res.Action != "remove" {
				t.Errorf("remove: %d %q %v", code, out, err)
			}
		})
	}
}

func TestSetupCommand_Errors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".claude", "settings.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("{\"hooks\": nope}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := runStdin(t, "", "setup", "claude", "--project", dir)
	if code != exitUsage || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "not valid JSON") {
		t.Errorf("invalid settings: %d %q", code, errOut)
	}
	if _, errOut, code = runStdin(t, "", "setup", "gemini"); code != exitUsage {
		t.Errorf("unknown agent: %d %q", code, errOut)
	}
}

func TestSetupDaemon_Unit(t *testing.T) {
	u := daemonUnit("/usr/local/bin/tine", "/var/lib/tine")
	for _, want := range []string{"ExecStart=/usr/local/bin/tine serve --system\n", "Environment=TINE_HOME=/var/lib/tine\n",
		"KillMode=process\n", "WantedBy=multi-user.target\n"} {
		if !strings.Contains(u, want) {
			t.Errorf("the unit lacks %q:\n%s", want, u)
		}
	}
	if strings.Contains(u, "Private") || strings.Contains(u, "Protect") {
		t.Errorf("the unit sandboxes the daemon, which then refuses every caller:\n%s", u)
	}
}

// TestSetupDaemon_WithoutSystemd: where systemd is not running, tine setup
// daemon installs nothing and prints the one command that starts it; as
// anyone but root it refuses (exit 7).
func TestSetupDaemon_WithoutSystemd(t *testing.T) {
	if os.Geteuid() != 0 {
		_, errOut, code := runStdin(t, "", "setup", "daemon")
		if code != exitUnsupported || !strings.Contains(errOut, "sudo tine setup daemon") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("as a normal user: %d %q, want exit 7 and one line", code, errOut)
		}
		return
	}
	if systemdRunning() {
		t.Skip("systemd runs here: tine setup daemon would install the unit")
	}
	t.Setenv("TINE_DAEMON_SOCKET", filepath.Join(t.TempDir(), "tine.sock"))
	out, errOut, code := runStdin(t, "", "setup", "daemon")
	if code != 0 || !strings.Contains(out, "systemd is not running here; start the daemon with:\n  TINE_HOME=") ||
		!strings.Contains(out, " serve --system ") {
		t.Errorf("setup daemon: %d %q %q", code, out, errOut)
	}
	out, _, code = runStdin(t, "", "setup", "daemon", "--json")
	var res daemonSetup
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Systemd || res.Running || !strings.Contains(res.Command, "serve --system") {
		t.Errorf("setup daemon --json: %d %q %v", code, out, err)
	}
	if _, err := os.Stat(unitPath); err == nil {
		t.Errorf("%s was installed without systemd", unitPath)
	}
}

// TestSetupCodex_SaysWhoseMCPServer: a config that already has an MCP
// server named tine of the user's keeps it, and setup says tine's was
// not added (it said "Codex runs tine's MCP server" of the user's
// server); an inline mcp_servers says why none was added; a fresh config
// gets tine's and says so.
func TestSetupCodex_SaysWhoseMCPServer(t *testing.T) {
	for config, want := range map[string]string{
		"": "Codex runs tine's MCP server",
		"[mcp_servers.tine]\ncommand = \"my-tine\"\n":       "of that name of its own, kept",
		"mcp_servers = { docs = { command = \"docs\" } }\n": "in a way a table cannot extend",
	} {
		home := t.TempDir()
		if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Setenv("CODEX_HOME", home)
		out, errOut, code := runStdin(t, "", "setup", "codex")
		if code != 0 || !strings.Contains(out, want) || strings.Count(out, "MCP server") > 1 {
			t.Errorf("setup codex on %q: %d %q %q, want it to say %q", config, code, out, errOut, want)
		}
	}
}
