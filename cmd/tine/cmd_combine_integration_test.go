//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine/internal/testkit"
)

// TestCLI_Combine takes chosen paths of three forks into the source in
// one merge: a dry run, a conflict between two forks' paths and one with
// the source (exit 9, nothing of any part written), bad takes, and a
// clean combine that leaves the forks as they were.
func TestCLI_Combine(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws := e.workspaceDir("app")
	writeTestFiles(t, ws, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
	e.ok("init", ws)
	var fork struct {
		Group struct {
			ID string `json:"id"`
		} `json:"group"`
	}
	e.okJSON(&fork, "fork", "source", "-n", "3", "--json")
	g := fork.Group.ID
	e.execSh("source-1", "echo one > a.txt; echo x > shared.txt")
	e.execSh("source-2", "echo two > b.txt; echo y > shared.txt; mkdir new; echo n2 > new/two.txt")
	e.execSh("source-3", "echo three > c.txt; mkdir new; echo n3 > new/three.txt")
	if err := os.WriteFile(filepath.Join(ws, "c.txt"), []byte("source\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unchanged := func(when string) {
		t.Helper()
		if a, b := readTestFile(t, ws, "a.txt"), readTestFile(t, ws, "b.txt"); a != "a\n" || b != "b\n" {
			t.Errorf("%s: a.txt %q, b.txt %q; want them untouched", when, a, b)
		}
		if _, err := os.Lstat(filepath.Join(ws, "shared.txt")); err == nil {
			t.Errorf("%s: shared.txt was written", when)
		}
	}

	out := e.ok("combine", g, "--take", "source-1:a.txt", "--take", "source-2:b.txt", "--dry-run")
	if !strings.Contains(out, "2 path(s) from 2 fork(s) would combine cleanly into source (dry run)") {
		t.Errorf("dry run: %q", out)
	}
	unchanged("dry run")

	r := e.tine("combine", g, "--take", "source-1:a.txt", "--take", "source-1:shared.txt", "--take", "source-2:shared.txt")
	if r.code != exitConflict || !strings.Contains(r.stdout, "taken from source-1 and from source-2 (shared.txt)") ||
		!strings.Contains(r.stdout, "taken from source-2 and from source-1 (shared.txt)") || !strings.Contains(r.stdout, "2 in conflict; nothing written") {
		t.Errorf("two forks' shared.txt: %+v", r)
	}
	unchanged("conflict between forks")

	r = e.tine("combine", g, "--take", "source-1:a.txt", "--take", "source-3:c.txt")
	if r.code != exitConflict || !strings.Contains(r.stdout, "1 in conflict") {
		t.Errorf("c.txt changed in the source too: %+v", r)
	}
	unchanged("conflict with the source")

	for _, bad := range [][]string{{"--take", "a.txt"}, {"--take", "source-1:"}, {}, {"--take", "nosuch:a.txt"}} {
		if r := e.tine(append([]string{"combine", g}, bad...)...); r.code == 0 || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("combine %v: %+v; want one line of error", bad, r)
		}
	}
	if r := e.tine("combine", g, "--take", "a.txt"); r.code != exitUsage {
		t.Errorf("--take without a fork: exit %d; want %d", r.code, exitUsage)
	}

	out = e.ok("combine", g, "--take", "source-1:a.txt", "--take", "source-2:b.txt", "--take", "source-2:new", "--take", "source-3:new/three.txt")
	if !strings.Contains(out, "from 3 fork(s) into source") {
		t.Errorf("combine: %q", out)
	}
	for path, want := range map[string]string{"a.txt": "one\n", "b.txt": "two\n", "c.txt": "source\n", "new/two.txt": "n2\n", "new/three.txt": "n3\n"} {
		if got := readTestFile(t, ws, path); got != want {
			t.Errorf("after combine, %s = %q; want %q", path, got, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(ws, "shared.txt")); err == nil {
		t.Error("combine wrote shared.txt, which no take named")
	}
	if out := e.ok("ls"); !strings.Contains(out, "source-1") || !strings.Contains(out, "source-3") {
		t.Errorf("combine resolved the forks:\n%s", out)
	}
}
