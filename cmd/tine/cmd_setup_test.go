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
