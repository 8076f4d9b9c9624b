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

// TestUser_CombineThroughTheSystemDaemon: a normal user combines chosen
// paths of two forks through the system daemon: a conflict with the
// source is reported with its plan (exit 9, nothing written), a clean
// combine lands both paths, as the user's files. Before, combine refused
// every normal user ("does not go through the tine daemon").
func TestUser_CombineThroughTheSystemDaemon(t *testing.T) {
	_, ann, _, dir := userWorkspace(t)
	ann.ok(dir, "init", ".")
	var fork struct {
		Group struct {
			ID string `json:"id"`
		} `json:"group"`
	}
	ann.okJSON(dir, &fork, "fork", "source", "-n", "2", "--json")
	ann.ok(dir, "exec", "source-1", "--", "sh", "-c", "echo one > one.txt; echo f1 > src/a.txt")
	ann.ok(dir, "exec", "source-2", "--", "sh", "-c", "echo two > two.txt")
	if err := os.WriteFile(filepath.Join(dir, "src", "a.txt"), []byte("source\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := fork.Group.ID
	if r := ann.tine(dir, nil, "combine", g, "--take", "source-1:src/a.txt", "--take", "source-2:two.txt"); r.code != exitConflict ||
		!strings.Contains(r.stdout+r.stderr, "src/a.txt") {
		t.Errorf("a combine that conflicts with the source: %v", r)
	}
	if _, err := os.Lstat(filepath.Join(dir, "two.txt")); err == nil {
		t.Fatal("a conflicting combine wrote two.txt")
	}
	ann.ok(dir, "combine", g, "--take", "source-1:one.txt", "--take", "source-2:two.txt")
	for _, f := range []string{"one.txt", "two.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil || uidOf(t, filepath.Join(dir, f)) != ann.uid {
			t.Errorf("%s after the combine: %v, not the user's", f, err)
		}
	}
}

// TestCLI_MergeTwiceSaysNothingToMerge: merging a fork whose paths the
// target has already says so, instead of "merged 2 path(s)" as if it had
// written them again; a later change counts only itself.
func TestCLI_MergeTwiceSaysNothingToMerge(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws := e.workspaceDir("app")
	writeTestFiles(t, ws, map[string]string{"a.txt": "a\n"})
	e.ok("init", ws)
	e.ok("fork", "source", "-n", "2")
	if out := e.ok("merge", "source-2", "--dry-run"); !strings.Contains(out, "nothing to merge: source-2 changed nothing since its fork point") {
		t.Errorf("a merge of a fork that changed nothing: %s", out) // it said "source has all 0 path(s)"
	}
	e.execSh("source-1", "echo b > a.txt; echo n > new.txt")
	if out := e.ok("merge", "source-1"); !strings.Contains(out, "merged 2 path(s) from source-1 into source") {
		t.Errorf("first merge: %s", out)
	}
	if out := e.ok("merge", "source-1"); !strings.Contains(out, "nothing to merge: source has all 2 path(s) of source-1 already") {
		t.Errorf("second merge: %s", out)
	}
	e.execSh("source-1", "echo c > c.txt")
	if out := e.ok("merge", "source-1"); !strings.Contains(out, "merged 1 path(s) from source-1 into source; 2 more already the same there") {
		t.Errorf("third merge: %s", out)
	}
}

// TestCLI_MergeNothingSaysWhy: an empty plan says what it covered: a paths
// merge names the paths the fork changed nothing under (it said the fork
// "changed nothing", which it had), and a git-scope merge of a fork that
// changed only files git ignores says git sees nothing and how to merge
// them.
func TestCLI_MergeNothingSaysWhy(t *testing.T) {
	e, _ := gitWorkspace(t, map[string]string{"a.txt": "a\n", ".gitignore": "*.log\n", "docs/x": "x\n"}, "", 1)
	e.execSh("source-1", "echo b > a.txt; echo built > out.log")
	if out := e.ok("merge", "source-1", "--paths", "docs", "--dry-run"); !strings.Contains(out, "nothing to merge: source-1 changed nothing under docs since its fork point") {
		t.Errorf("a paths merge where the fork changed nothing: %s", out)
	}
	e.execSh("source-1", "git checkout -q a.txt")
	if out := e.ok("merge", "source-1", "--dry-run"); !strings.Contains(out, "source-1 changed nothing git sees since its fork point") {
		t.Errorf("a git-scope merge of a fork that changed only ignored files: %s", out)
	}
}
