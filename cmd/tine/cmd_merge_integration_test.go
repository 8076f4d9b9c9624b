//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tinehq/tine/internal/testkit"
)

// TestCLI_MergePromoteChoose drives the resolution commands as a person
// would: concurrent edits, a dry run, a conflict (exit 9, nothing written),
// a clean merge, compare, choose, and promote.
func TestCLI_MergePromoteChoose(t *testing.T) {
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
	e.execSh("source-1", "echo one > a.txt")
	e.execSh("source-2", "echo two > b.txt")
	e.execSh("source-3", "echo three > c.txt")
	if err := os.WriteFile(filepath.Join(ws, "c.txt"), []byte("source\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	out := e.ok("merge", "source-1", "--dry-run")
	if !strings.Contains(out, "take") || !strings.Contains(out, "dry run") || readTestFile(t, ws, "a.txt") != "a\n" {
		t.Errorf("dry run: %q, a.txt %q", out, readTestFile(t, ws, "a.txt"))
	}
	r := e.tine("merge", "source-3")
	if r.code != 9 || !strings.Contains(r.stdout, "conflict") || !strings.HasPrefix(r.stderr, "tine: ") {
		t.Errorf("conflicting merge: %v", r)
	}
	if readTestFile(t, ws, "c.txt") != "source\n" {
		t.Error("a conflicting merge wrote into the source")
	}
	out = e.ok("compare", fork.Group.ID)
	if !strings.Contains(out, "source-1 *") && !strings.Contains(out, "source-2 *") {
		t.Errorf("compare marks no recommendation:\n%s", out)
	}
	e.ok("choose", fork.Group.ID, "source-1", "--merge")
	if got := readTestFile(t, ws, "a.txt"); got != "one\n" {
		t.Errorf("a.txt after choose: %q", got)
	}
	if out := e.ok("ls"); strings.Contains(out, "source-2") || strings.Contains(out, "source-3") {
		t.Errorf("the others were not discarded:\n%s", out)
	}
	if out := e.ok("tree"); !strings.Contains(out, "merged") {
		t.Errorf("tree does not show the merge:\n%s", out)
	}

	e.ok("fork", "source", "--name", "next")
	e.execSh("next", "echo promoted > b.txt")
	e.ok("promote", "next")
	if readTestFile(t, ws, "b.txt") != "promoted\n" || readTestFile(t, ws, "a.txt") != "one\n" {
		t.Errorf("after promote: b.txt %q", readTestFile(t, ws, "b.txt"))
	}
	if out := e.ok("ls"); !strings.Contains(out, "source ") || strings.Contains(out, "next") {
		t.Errorf("ls after promote:\n%s", out)
	}
}

func writeTestFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readTestFile(t *testing.T, root, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCLI_MergeGitEverydayChanges is issue 12's three reports through the
// real binary on an overlay workspace: a new directory (git scope), a
// deleted lower-layer directory (filesystem scope), and uncommitted work at
// fork time continued by the fork (git scope), each merging cleanly.
func TestCLI_MergeGitEverydayChanges(t *testing.T) {
	e, ws := gitWorkspace(t, map[string]string{"A": "a\n", "dir/sub/f": "d\n", "keep": "k\n"}, "echo a2 >> A", 3)
	e.execSh("source-1", "mkdir -p newdir/deeper && echo x > newdir/deeper/f")
	e.execSh("source-2", "rm -rf dir")
	e.execSh("source-3", "echo a3 >> A")
	if out := e.ok("merge", "source-1"); !strings.Contains(out, "newdir") {
		t.Errorf("merge source-1:\n%s", out)
	}
	if got := readTestFile(t, ws, "newdir/deeper/f"); got != "x\n" {
		t.Errorf("newdir/deeper/f = %q", got)
	}
	e.ok("merge", "source-2", "--filesystem")
	if _, err := os.Lstat(filepath.Join(ws, "dir")); !os.IsNotExist(err) {
		t.Errorf("dir after merging its deletion: %v", err)
	}
	if out := e.ok("merge", "source-3", "--git", "--dry-run"); !strings.Contains(out, "take") || strings.Contains(out, "conflict") {
		t.Errorf("dry run of source-3:\n%s", out)
	}
	e.ok("merge", "source-3", "--git")
	if got := readTestFile(t, ws, "A"); got != "a\na2\na3\n" {
		t.Errorf("A = %q, want the source's uncommitted line and the fork's", got)
	}
}

// TestCLI_MergeCommits carries a fork's commits into the source's history
// (the default):
// fast-forward while the source's HEAD is the fork point, a replay with
// messages and authors once it moved, and a refusal (exit 9, nothing
// written) when a commit does not apply.
func TestCLI_MergeCommits(t *testing.T) {
	e, ws := gitWorkspace(t, map[string]string{"A": "a\n", "B": "b\n"}, "", 3)
	git := "git -c user.name=t -c user.email=t@t "
	e.execSh("source-1", "echo a1 >> A && "+git+"-c user.name=Ada -c user.email=ada@x commit -qam 'fork one' && echo wip > W")
	e.execSh("source-2", "echo b2 >> B && "+git+"commit -qam 'fork two'")
	e.execSh("source-3", "echo a3 > A && "+git+"commit -qam 'fork three'")
	head := strings.TrimSpace(hostCmd(t, ws, "git", "rev-parse", "HEAD"))

	out := e.ok("merge", "source-1")
	if !strings.Contains(out, "commits: 1 fast-forwarded") {
		t.Errorf("merge source-1:\n%s", out)
	}
	if log := hostCmd(t, ws, "git", "log", "-1", "--format=%an %s"); strings.TrimSpace(log) != "Ada fork one" {
		t.Errorf("source's HEAD after the fast-forward: %q", log)
	}
	if st := hostCmd(t, ws, "git", "status", "--porcelain"); strings.TrimSpace(st) != "?? W" {
		t.Errorf("git status after --commits: %q, want only the fork's uncommitted W", st)
	}
	out = e.ok("merge", "source-2", "--commits") // the default, still accepted
	if !strings.Contains(out, "commits: 1 replayed") {
		t.Errorf("merge --commits source-2:\n%s", out)
	}
	if log := hostCmd(t, ws, "git", "log", "--format=%s", head+"..HEAD"); log != "fork two\nfork one\n" {
		t.Errorf("source's history: %q", log)
	}
	before := readTestFile(t, ws, "A")
	r := e.tine("merge", "source-3", "--commits", "--no-commits")
	if r.code != 2 || !strings.Contains(r.stderr, "exclude each other") {
		t.Errorf("--commits with --no-commits: %v", r)
	}
	r = e.tine("merge", "source-3")
	if r.code != 9 || readTestFile(t, ws, "A") != before {
		t.Errorf("a conflicting commit: %v; A = %q", r, readTestFile(t, ws, "A"))
	}
}

// TestCLI_RenameLowerDirectory: tools rename directories with rename(2)
// (git mv, os.rename, package managers), which an overlay view refuses for
// a directory of a lower layer unless it records the rename as a redirect.
// The renames work in a fork and in the source, the fork's diff names
// every moved file, a merge in each scope carries them, and release of a
// source whose delta holds a redirect gives the view's tree.
func TestCLI_RenameLowerDirectory(t *testing.T) {
	e, ws := gitWorkspace(t, map[string]string{"src/lib/a.go": "a\n", "src/lib/deep/b.go": "b\n", "docs/x": "x\n"}, "", 2)
	e.execSh("source-1", "git mv src/lib src/pkg")
	e.execSh("source-2", "python3 -c 'import os; os.rename(\"docs\", \"manual\")'")
	var changes []change
	e.okJSON(&changes, "diff", "source-1", "--json")
	got := map[string]string{}
	for _, c := range changes {
		got[c.Path] = c.Kind
	}
	for p, k := range map[string]string{"src/lib/a.go": "deleted", "src/lib/deep/b.go": "deleted", "src/pkg/a.go": "added", "src/pkg/deep/b.go": "added"} {
		if got[p] != k {
			t.Errorf("diff source-1: %s is %q, want %s (all: %v)", p, got[p], k, got)
		}
	}
	e.ok("merge", "source-1", "--git")
	e.ok("merge", "source-2", "--filesystem")
	for p, want := range map[string]string{"src/pkg/a.go": "a\n", "src/pkg/deep/b.go": "b\n", "manual/x": "x\n"} {
		if readTestFile(t, ws, p) != want {
			t.Errorf("%s after the merges: %q", p, readTestFile(t, ws, p))
		}
	}
	for _, p := range []string{"src/lib", "docs"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); !os.IsNotExist(err) {
			t.Errorf("%s after the merges: %v", p, err)
		}
	}
	hostSh(t, ws, "python3 -c 'import os; os.rename(\"src\", \"code\")'") // src comes from the base layer
	before := walkHost(t, ws)
	e.ok("release", "--unmerged", ws)
	requireSameTree(t, "the released workspace", before, walkHost(t, ws), compareOpts{})
}

// gitWorkspace makes a git repository of files (committed, then changed on
// the host by the shell script after, if any), inits it as workspace "app"
// and forks its source n ways; it returns the environment and the path.
func gitWorkspace(t *testing.T, files map[string]string, after string, n int) (*env, string) {
	t.Helper()
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws := e.workspaceDir("app")
	writeTestFiles(t, ws, files)
	script := "git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm init"
	if after != "" {
		script += " && " + after
	}
	hostSh(t, ws, script)
	e.ok("init", ws)
	e.ok("fork", "source", "-n", strconv.Itoa(n))
	return e, ws
}

// TestCLI_MergeSummary is issue 24's 40,042 lines printed by a merge, in
// small: a fork that added 300 files merges with a summary (the counts,
// the first 10 paths, how many more), --verbose and --json list every
// path, and a plan in conflict lists every conflict.
func TestCLI_MergeSummary(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws := e.workspaceDir("app")
	files := map[string]string{}
	for i := range 60 {
		files[fmt.Sprintf("c%03d.txt", i)] = "base\n"
	}
	for i := range 15 {
		files[fmt.Sprintf("s%03d.txt", i)] = "base\n"
	}
	writeTestFiles(t, ws, files)
	e.ok("init", ws)
	e.ok("fork", "source", "--name", "big")
	e.ok("fork", "source", "--name", "clash")
	e.execSh("big", "mkdir new && for i in $(seq 1000 1299); do echo $i > new/n$i.txt; done")
	e.execSh("clash", "for f in c*.txt; do echo clash > $f; done; for f in s*.txt; do echo same > $f; done; echo x > n.txt")
	for i := range 15 {
		writeTestFiles(t, ws, map[string]string{fmt.Sprintf("s%03d.txt", i): "same\n"})
	}

	for _, args := range [][]string{{"--dry-run"}, {}} {
		out := e.ok(append([]string{"merge", "big"}, args...)...)
		if n := strings.Count(out, "\n"); n > 20 || planRows(out, "take", "bytes") != 10 ||
			!strings.Contains(out, "and 291 more (--verbose lists every path)") || !strings.Contains(out, "paths: 301 take\n") {
			t.Errorf("merge big %v: %d lines, want a summary:\n%s", args, n, out)
		}
		if len(args) == 0 {
			break
		}
		if out := e.ok("merge", "big", "--dry-run", "--verbose"); strings.Count(out, "new/n1") != 300 || strings.Contains(out, "more") {
			t.Errorf("merge --verbose lists %d of 300 paths:\n%s", strings.Count(out, "new/n1"), out)
		}
		var res struct {
			Plan struct {
				Entries []json.RawMessage `json:"entries"`
			} `json:"plan"`
		}
		e.okJSON(&res, "merge", "big", "--dry-run", "--json")
		if len(res.Plan.Entries) != 301 {
			t.Errorf("merge --json has %d entries, want 301", len(res.Plan.Entries))
		}
	}
	if got := readTestFile(t, ws, "new/n1299.txt"); got != "1299\n" {
		t.Errorf("new/n1299.txt after the merge: %q", got)
	}

	for i := range 60 {
		writeTestFiles(t, ws, map[string]string{fmt.Sprintf("c%03d.txt", i): "source\n"})
	}
	r := e.tine("merge", "clash")
	if r.code != exitConflict {
		t.Fatalf("merge clash: %v", r)
	}
	if n := planRows(r.stdout, "conflict", "changed in both"); n != 60 {
		t.Errorf("merge clash lists %d of its 60 conflicts:\n%s", n, r.stdout)
	}
	if !strings.Contains(r.stdout, "and 5 more") || !strings.Contains(r.stdout, "paths: 1 take, 15 converged, 60 conflict\n") {
		t.Errorf("merge clash, the summary:\n%s", r.stdout)
	}
}

// planRows counts the rows of a merge's text output that are of action
// and contain text.
func planRows(out, action, text string) int {
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, action+" ") && strings.Contains(l, text) {
			n++
		}
	}
	return n
}
