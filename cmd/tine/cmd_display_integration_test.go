//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/layer"
)

// Names a fork can give its files to fool whoever reads tine's output: one
// that erases the line and rewrites it to read as a change of README.md,
// and one that is not UTF-8.
const (
	evilName = "evil\x1b[2K\rM  README.md"
	badName  = "bad\xffname"
)

// requireEscaped fails unless out holds no raw ESC or CR (nor the bytes of
// badName) and shows each of want as it is quoted.
func requireEscaped(t *testing.T, what, out string, want ...string) {
	t.Helper()
	if strings.ContainsAny(out, "\x1b\r") || strings.Contains(out, "\xff") {
		t.Errorf("%s prints a fork's name raw:\n%q", what, out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s does not show %s:\n%s", what, w, out)
		}
	}
}

// TestCLI_HostileNamesEscaped: file names and an approach label a fork
// controls reach the terminal quoted (diff, merge --dry-run, compare,
// export), and --json keeps them exact.
func TestCLI_HostileNamesEscaped(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws := e.workspaceDir("app")
	writeTestFiles(t, ws, map[string]string{"README.md": "read me\n"})
	e.ok("init", ws)
	var fork struct {
		Group struct {
			ID string `json:"id"`
		} `json:"group"`
	}
	e.okJSON(&fork, "fork", "source", "--approach", "sneaky\x1b[1A\rapproach", "--json")
	view := e.path("source-1")
	for _, n := range []string{evilName, badName} {
		if err := os.WriteFile(filepath.Join(view, n), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	quotedEvil, quotedBad := `"evil\x1b[2K\rM  README.md"`, `"bad\xffname"`

	requireEscaped(t, "tine diff", e.ok("diff", "source-1"), quotedEvil, quotedBad)
	requireEscaped(t, "tine diff --patch", e.ok("diff", "source-1", "--patch"), "+++ b/"+quotedEvil)
	requireEscaped(t, "tine merge --dry-run", e.ok("merge", "source-1", "--dry-run"), quotedEvil, quotedBad)
	requireEscaped(t, "tine compare", e.ok("compare", fork.Group.ID), `sneaky\x1b[1A\rapproach`)
	requireEscaped(t, "tine export", e.ok("export", fork.Group.ID), quotedEvil, quotedBad)
	requireEscaped(t, "tine ls", e.ok("ls"), `sneaky\x1b[1A\rapproach`)

	// --json stays exact: the escape and the carriage return are JSON
	// escapes that decode to the name's bytes. JSON carries text, so bytes
	// that are not UTF-8 become U+FFFD there, as encoding/json has always
	// written them (the contract docs/cli.md states).
	var changes []layer.Change
	e.okJSON(&changes, "diff", "source-1", "--json")
	got := map[string]bool{}
	for _, c := range changes {
		got[c.Path] = true
	}
	if !got[evilName] || !got["bad\uFFFDname"] {
		t.Errorf("diff --json paths %v, want %q and the other with U+FFFD", got, evilName)
	}
	var plan struct {
		Plan struct {
			Entries []struct {
				Path string `json:"path"`
			} `json:"entries"`
		} `json:"plan"`
	}
	out := e.ok("merge", "source-1", "--dry-run", "--json")
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, en := range plan.Plan.Entries {
		paths = append(paths, en.Path)
	}
	if !strings.Contains(strings.Join(paths, "\n"), evilName) {
		t.Errorf("merge --dry-run --json paths %q, want %q", paths, evilName)
	}
}

// TestForkRun_SummaryEscapesForkText: tine summary shows an approach and
// the test's output a fork controls with their control characters escaped.
func TestForkRun_SummaryEscapesForkText(t *testing.T) {
	e, dir := forkRunWorkspace(t, "")
	check := "printf 'PASS\\033[2K\\rFAIL \\377\\n'; grep -q OK app.txt\n"
	if err := os.WriteFile(filepath.Join(dir, "check.sh"), []byte(check), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, r := e.forkRunJSON("source", "--prompt", "fix app.txt", "-n", "1",
		"--approach", "fix\x1b[2K\rit", "--merge-mode", "manual")
	if r.code != 0 || len(rep.Forks) != 1 {
		t.Fatalf("fork-run: %v", r)
	}
	requireEscaped(t, "tine summary", e.ok("summary", "source-1"), `fix\x1b[2K\rit`, `PASS\x1b[2K`)
}
