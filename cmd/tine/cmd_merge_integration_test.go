//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLI_MergePromoteChoose drives the resolution commands as a person
// would: concurrent edits, a dry run, a conflict (exit 9, nothing written),
// a clean merge, compare, choose, and promote.
func TestCLI_MergePromoteChoose(t *testing.T) {
	requireRoot(t)
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
