//go:build linux

package main

import (
	"strings"
	"testing"

	"github.com/tinehq/tine/internal/testkit"
)

// TestCLI_ForceSaysWhatItOverrides: discard and release take --unmerged,
// merge --while-running; a refusal names the new flag, --help shows it
// and not --force, and --force still works for one release, saying which
// flag to use instead.
func TestCLI_ForceSaysWhatItOverrides(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws := e.workspaceDir("app")
	writeTestFiles(t, ws, map[string]string{"a.txt": "a\n"})
	e.ok("init", ws)
	e.ok("fork", "source", "-n", "3")
	for _, r := range []string{"source-1", "source-2", "source-3"} {
		e.execSh(r, "echo "+r+" > a.txt")
	}

	r := e.tine("discard", "source-1")
	if r.code != exitUnmerged || !strings.Contains(r.stderr, "use --unmerged to discard anyway") {
		t.Errorf("discarding unmerged work: %v (want the refusal to name --unmerged)", r)
	}
	var out []jsonRun
	e.okJSON(&out, "discard", "source-1", "--unmerged", "--json")
	if len(out) != 1 || out[0].State != "discarded" {
		t.Errorf("discard --unmerged --json: %+v", out)
	}
	r = e.tine("discard", "source-2", "--force")
	if r.code != 0 || !strings.Contains(r.stderr, "--force is deprecated and goes away in the next release; use --unmerged") {
		t.Errorf("discard --force: %v (want it done, with the flag to use instead)", r)
	}
	r = e.tine("merge", "source-3", "--force", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stderr, "use --while-running") {
		t.Errorf("merge --force: %v (want it done, with the flag to use instead)", r)
	}
	// A deprecation notice goes to stderr: on stdout it broke --json.
	var plan map[string]any
	e.okJSON(&plan, "merge", "source-3", "--commits", "--dry-run", "--json")
	for cmd, flag := range map[string]string{"discard": "--unmerged", "release": "--unmerged", "merge": "--while-running"} {
		help := e.ok(cmd, "--help")
		if !strings.Contains(help, flag) || strings.Contains(help, "--force") {
			t.Errorf("tine %s --help: want %s and no --force:\n%s", cmd, flag, help)
		}
	}

	r = e.tine("release", ws)
	if r.code != exitUnmerged || !strings.Contains(r.stderr, "--unmerged") {
		t.Errorf("releasing with unmerged forks: %v (want the refusal to name --unmerged)", r)
	}
	e.ok("release", ws, "--unmerged")
	if got := readTestFile(t, ws, "a.txt"); got != "a\n" {
		t.Errorf("a.txt after release: %q", got)
	}
}
