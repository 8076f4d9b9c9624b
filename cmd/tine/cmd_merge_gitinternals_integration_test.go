//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLI_MergeLeavesOutGitInternals is issue 31's merge finding through
// the real binary: a fork commits, and writes a pre-commit hook and a
// core.fsmonitor into the repository's config; a --filesystem merge
// carries the commit (objects, refs, index) but leaves the hook and the
// config out, and says so in the plan, so the person's next git status
// and git commit run nothing of the fork's; --include-git-internals
// carries them, and goes only with the filesystem and paths scopes.
func TestCLI_MergeLeavesOutGitInternals(t *testing.T) {
	e, ws := gitWorkspace(t, map[string]string{"a.txt": "a\n"}, "", 2)
	marker := filepath.Join(t.TempDir(), "ran")
	plant := "printf '#!/bin/sh\\ntouch " + marker + "\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && " +
		"git config core.fsmonitor " + filepath.Join(ws, ".git/hooks/pre-commit")
	e.execSh("source-1", "echo edited > a.txt && git -c user.name=f -c user.email=f@f commit -qam edit && "+plant)
	forkHead := strings.TrimSpace(e.execSh("source-1", "git rev-parse HEAD"))

	out := e.ok("merge", "source-1", "--filesystem", "--dry-run")
	for _, want := range []string{"left_out", ".git/hooks/pre-commit", ".git/config", "left out 2 path(s)", "--include-git-internals"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run does not say %q:\n%s", want, out)
		}
	}
	out = e.ok("merge", "source-1", "--filesystem")
	if !strings.Contains(out, "left out 2 path(s)") {
		t.Errorf("merge does not say what it left out:\n%s", out)
	}
	if got := strings.TrimSpace(hostSh(t, ws, "git rev-parse HEAD")); got != forkHead || readTestFile(t, ws, "a.txt") != "edited\n" {
		t.Errorf("the fork's commit did not merge: HEAD %s, want %s", got, forkHead)
	}
	if _, err := os.Lstat(filepath.Join(ws, ".git/hooks/pre-commit")); !os.IsNotExist(err) {
		t.Errorf("the fork's pre-commit hook reached the source: %v", err)
	}
	if cfg := readTestFile(t, ws, ".git/config"); strings.Contains(cfg, "fsmonitor") {
		t.Errorf("the fork's fsmonitor reached the source's config:\n%s", cfg)
	}
	hostSh(t, ws, "git status --short >/dev/null && echo b > b.txt && git add b.txt && git -c user.name=p -c user.email=p@p commit -qm person")
	if _, err := os.Lstat(marker); !os.IsNotExist(err) {
		t.Fatalf("the person's git status or commit ran the fork's code: %v", err)
	}

	if r := e.tine("merge", "source-2", "--git", "--include-git-internals"); r.code != 2 || !strings.Contains(r.stderr, "--include-git-internals") {
		t.Errorf("--include-git-internals with --git: %v", r)
	}
	e.execSh("source-2", plant)
	e.ok("merge", "source-2", "--filesystem", "--include-git-internals")
	if cfg := readTestFile(t, ws, ".git/config"); !strings.Contains(cfg, "fsmonitor") {
		t.Errorf("--include-git-internals did not carry the config:\n%s", cfg)
	}
	if _, err := os.Lstat(filepath.Join(ws, ".git/hooks/pre-commit")); err != nil {
		t.Errorf("--include-git-internals did not carry the hook: %v", err)
	}
}
