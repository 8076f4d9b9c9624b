package hook

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/setup")

// golden compares got with testdata/setup/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "setup", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n%s", name, got)
	}
}

// sameJSON reports whether two documents hold the same values.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(va, vb)
}

// TestSetup_ClaudeRoundTrip merges into real settings files that already
// have hooks, checks the result against a golden file, merges again
// (nothing changes), and removes (the original values come back).
func TestSetup_ClaudeRoundTrip(t *testing.T) {
	for _, name := range []string{"settings.json.disler-hooks-mastery.json", "plugin-hooks.json.anthropic-security-guidance.json"} {
		t.Run(name, func(t *testing.T) {
			before := readFixture(t, "claude/config/"+name)
			cmd := HookCommand("tine", Claude)
			after, changed, err := Merge(Claude, before, cmd)
			if err != nil || !changed {
				t.Fatalf("merge: %v %v", changed, err)
			}
			golden(t, "claude."+name, after)
			again, changed, err := Merge(Claude, after, cmd)
			if err != nil || changed || !bytes.Equal(again, after) {
				t.Errorf("second merge changed the file (%v, %v)", changed, err)
			}
			removed, changed, err := Unmerge(Claude, after)
			if err != nil || !changed {
				t.Fatalf("unmerge: %v %v", changed, err)
			}
			if !sameJSON(t, removed, before) {
				t.Errorf("remove did not restore the original:\n%s", removed)
			}
			if _, changed, _ := Unmerge(Claude, removed); changed {
				t.Error("second remove changed the file")
			}
		})
	}
}

func TestSetup_ClaudeKeepsOrderAndOthers(t *testing.T) {
	before := []byte(`{"z": 1, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}, "a": {"n": 1.50}}`)
	after, _, err := Merge(Claude, before, "tine hook claude")
	if err != nil {
		t.Fatal(err)
	}
	s := string(after)
	if strings.Index(s, `"z"`) > strings.Index(s, `"a"`) || !strings.Contains(s, `1.50`) || !strings.Contains(s, "say done") {
		t.Errorf("order, numbers or other hooks lost:\n%s", s)
	}
	removed, _, _ := Unmerge(Claude, after)
	if !sameJSON(t, removed, before) {
		t.Errorf("got\n%s", removed)
	}
}

func TestSetup_ClaudeEmpty(t *testing.T) {
	for _, before := range []string{"", "{}", `{"hooks":{}}`} {
		after, changed, err := Merge(Claude, []byte(before), "/opt/tine/bin/tine hook claude")
		if err != nil || !changed {
			t.Fatalf("%q: %v %v", before, changed, err)
		}
		removed, _, err := Unmerge(Claude, after)
		if err != nil || strings.TrimSpace(string(removed)) != "{}" {
			t.Errorf("%q: removed to %q (%v)", before, removed, err)
		}
	}
}

func TestSetup_ClaudeSharedGroup(t *testing.T) {
	// A handler added by hand beside tine's in one entry stays; only
	// tine's goes.
	before := []byte(`{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"tine hook claude"},{"type":"command","command":"say done"}]}]}}`)
	after, changed, err := Unmerge(Claude, before)
	if err != nil || !changed {
		t.Fatal(changed, err)
	}
	want := `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"say done"}]}]}}`
	if !sameJSON(t, after, []byte(want)) {
		t.Errorf("got %s", after)
	}
}

func TestSetup_ClaudeInvalid(t *testing.T) {
	for _, doc := range []string{`{"hooks": [}`, `[]`, `{"hooks": []}`, `{"hooks": {"Stop": {}}}`, `{} {}`} {
		if _, _, err := Merge(Claude, []byte(doc), "tine hook claude"); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line", doc, err)
		}
	}
}

func TestSetup_CodexRoundTrip(t *testing.T) {
	before := readFixture(t, "codex/config/config.toml.cortex-codex-app-stop-probe.toml")
	after, changed, err := Merge(Codex, before, HookCommand("tine", Codex))
	if err != nil || !changed {
		t.Fatalf("merge: %v %v", changed, err)
	}
	golden(t, "codex.config.toml", after)
	var c codexConfig
	if err := toml.Unmarshal(after, &c); err != nil || len(codexGroups(c.Hooks["Stop"])) != 2 || len(codexGroups(c.Hooks["PreToolUse"])) != 1 {
		t.Errorf("decoded %+v %v", c, err)
	}
	if again, changed, err := Merge(Codex, after, "tine hook codex"); err != nil || changed || !bytes.Equal(again, after) {
		t.Errorf("second merge changed the file (%v, %v)", changed, err)
	}
	removed, changed, err := Unmerge(Codex, after)
	if err != nil || !changed || !bytes.Equal(removed, before) {
		t.Errorf("remove: %v %v\n%s", changed, err, removed)
	}
}

func TestSetup_CodexRefuses(t *testing.T) {
	// An inline hooks table cannot be extended by [[hooks.EVENT]]: codex
	// refuses such a file whole ("cannot extend value of type inline
	// table"), so tine must not write one (a lenient parser let it).
	for _, doc := range []string{"hooks.PreToolUse = []\n", "not = [toml\n", "hooks = { }\n", "hooks = { state = { } }\n"} {
		if _, _, err := Merge(Codex, []byte(doc), "tine hook codex"); err == nil {
			t.Errorf("%q: no error", doc)
		}
	}
	byHand := []byte("[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = \"command\"\ncommand = \"tine hook codex\"\n")
	if _, changed, err := Merge(Codex, byHand, "tine hook codex"); err != nil || changed {
		t.Errorf("hand-written hook: %v %v", changed, err)
	}
	if _, _, err := Unmerge(Codex, byHand); err == nil {
		t.Error("removing a hand-written hook: no error")
	}
}

func TestSetup_Files(t *testing.T) {
	dir := t.TempDir()
	path, err := SettingsPath(Claude, dir)
	if err != nil {
		t.Fatal(err)
	}
	if changed, err := Uninstall(Claude, path); err != nil || changed {
		t.Fatalf("remove from no file: %v %v", changed, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatal("remove created the file")
	}
	if changed, err := Install(Claude, path, "tine"); err != nil || !changed {
		t.Fatal(changed, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := Uninstall(Claude, path); err != nil || !changed {
		t.Fatal(changed, err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestSetup_FilesInvalidUntouched(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	bad := []byte("{\n  \"hooks\": {,\n}\n")
	if err := os.WriteFile(path, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Install(Claude, path, "tine")
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("error %v, want one line naming line 2", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, bad) {
		t.Error("file changed")
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("left %d files", len(ents))
	}
}

func TestSetup_FilesThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "dotfiles-settings.json")
	if err := os.WriteFile(target, []byte(`{"model":"opus"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "settings.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(Claude, link, "tine"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the symlink was replaced")
	}
	if b, _ := os.ReadFile(target); !bytes.Contains(b, []byte("tine hook claude")) {
		t.Error("the target was not written")
	}
}

func TestIsTineCommand(t *testing.T) {
	for cmd, want := range map[string]bool{
		"tine hook claude":                 true,
		"/usr/local/bin/tine hook claude":  true,
		"'/opt/my tine/tine' hook claude":  true, // as HookCommand quotes it
		`'/opt/it'\''s/tine' hook claude`:  true,
		`"/opt/my tine/tine" hook claude`:  true,
		"/opt/my tine/tine hook claude":    false, // not one word: runs /opt/my
		"env X=1 tine hook claude":         false,
		"tine hook codex":                  false,
		"tine hook claude --json-decision": false,
		"python3 tine.py hook claude":      false,
	} {
		if got := IsTineCommand(cmd, Claude); got != want {
			t.Errorf("IsTineCommand(%q) = %v", cmd, got)
		}
	}
}
