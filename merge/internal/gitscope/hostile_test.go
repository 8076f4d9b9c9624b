package gitscope

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine/merge/internal/gittest"
)

// hostileKeys is every key of a repository's configuration that makes git
// run a command, each set to one that leaves a marker file named after it.
// (core.hooksPath names a directory of hooks that do the same.)
func hostileKeys(marks string) map[string]string {
	keys := []string{
		"filter.evil.clean", "filter.evil.smudge", "filter.evil.process",
		"diff.evil.textconv", "diff.evil.command", "diff.external",
		"merge.evil.driver", "core.fsmonitor", "core.sshCommand", "core.askPass",
		"credential.helper", "core.alternateRefsCommand", "gpg.program", "core.pager",
		"core.editor", "sequence.editor", "uploadpack.packObjectsHook",
	}
	out := map[string]string{}
	for _, k := range keys {
		out[k] = fmt.Sprintf("touch %s/%s; false", marks, k)
	}
	out["filter.evil.required"] = "true"
	out["commit.gpgSign"] = "true"
	out["log.showSignature"] = "true"
	out["core.hooksPath"] = filepath.Join(marks, "hooks")
	out[gitHooks] = "" // not a key: hooks in the repository's own .git/hooks
	return out
}

// gitHooks stands, among hostileKeys, for the repository's .git/hooks.
const gitHooks = ".git/hooks"

// enablers are the keys that make git reach a hostile key's command.
var enablers = map[string]map[string]string{
	"gpg.program": {"commit.gpgSign": "true", "log.showSignature": "true"},
}

// arm writes the whole hostile configuration into the repository at dir.
func arm(t *testing.T, dir, marks string) {
	t.Helper()
	armWith(t, dir, marks, hostileKeys(marks))
}

// armWith writes keys into the repository at dir (its .git/config and,
// for good measure, an included file), hooks in the directory
// core.hooksPath may name (and in .git/hooks when keys has gitHooks), and
// attributes that name the drivers for every path.
func armWith(t *testing.T, dir, marks string, keys map[string]string) {
	t.Helper()
	hooks := filepath.Join(marks, "hooks")
	gittest.Must(t, os.MkdirAll(hooks, 0o755))
	for _, h := range []string{"pre-commit", "post-commit", "reference-transaction", "post-index-change",
		"post-checkout", "post-merge", "pre-auto-gc", "fsmonitor-watchman", "post-rewrite", "sendemail-validate"} {
		script := fmt.Sprintf("#!/bin/sh\ntouch %s/hook-%s\n", marks, h)
		gittest.Must(t, os.WriteFile(filepath.Join(hooks, h), []byte(script), 0o755))
		if _, ok := keys[gitHooks]; ok {
			gittest.Must(t, os.MkdirAll(filepath.Join(dir, ".git", "hooks"), 0o755))
			gittest.Must(t, os.WriteFile(filepath.Join(dir, ".git", "hooks", h), []byte(script), 0o755))
		}
	}
	included := filepath.Join(marks, "included")
	for k, v := range keys {
		if k == gitHooks {
			continue
		}
		gittest.Git(t, dir, "config", k, v)
		gittest.Git(t, dir, "config", "--file", included, k, v)
	}
	gittest.Git(t, dir, "config", "include.path", included)
	attrs := "* filter=evil diff=evil merge=evil\n"
	gittest.Must(t, os.MkdirAll(filepath.Join(dir, ".git", "info"), 0o755))
	gittest.Must(t, os.WriteFile(filepath.Join(dir, ".git", "info", "attributes"), []byte(attrs), 0o644))
}

// noMarks fails the test for every marker a command of the configuration left.
func noMarks(t *testing.T, marks string) {
	t.Helper()
	ents, err := os.ReadDir(marks)
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for _, e := range ents {
		if n := e.Name(); n != "hooks" && n != "included" {
			ran = append(ran, n)
		}
	}
	if len(ran) > 0 {
		t.Errorf("git ran what the repository configures: %v", ran)
	}
}

// A run that configures git to run its commands (a clean filter named in
// its attributes, a diff driver, fsmonitor, hooks...) gets none of them
// run by a plan of its work, on either path of the planner: the plan's git
// runs with tine's configuration, never the run's.
func TestPlan_RunsNothingTheRunConfigures(t *testing.T) {
	for _, quick := range []bool{true, false} {
		t.Run(fmt.Sprintf("quick=%v", quick), func(t *testing.T) {
			defer func(v bool) { quickOff = v }(quickOff)
			quickOff = !quick
			marks := t.TempDir()
			theirs, ours, head := gittest.Pair(t, map[string]string{"a": "a\n", "b": "b\n", "keep": "k\n"})
			arm(t, theirs, marks)
			gittest.Write(t, theirs, map[string]string{"a": "a2\n", "new": "n\n", ".gitattributes": "*.txt filter=evil\n", "x.txt": "x\n"})
			gittest.Must(t, os.Remove(filepath.Join(theirs, "b")))
			pl := planT(t, theirs, head, ours)
			noMarks(t, marks)
			got := map[string]bool{}
			for _, e := range pl.Entries {
				got[e.Path] = true
			}
			for _, p := range []string{"a", "b", "new", "x.txt", ".gitattributes"} {
				if !got[p] {
					t.Errorf("the plan lacks %s: %+v", p, pl.Entries)
				}
			}
		})
	}
}

// Carrying a run's commits runs nothing either the run's repository or the
// target's configures: the target may be a normal user's, and tine's git
// runs as root.
func TestCommits_RunsNothingEitherRepositoryConfigures(t *testing.T) {
	for _, moved := range []bool{false, true} {
		t.Run(fmt.Sprintf("targetMoved=%v", moved), func(t *testing.T) {
			marks := t.TempDir()
			theirs, ours, head := gittest.Pair(t, map[string]string{"a": "a\n", "b": "b\n"})
			gittest.Write(t, theirs, map[string]string{"a": "a2\n"})
			gittest.Git(t, theirs, "commit", "-qam", "run: a2")
			if moved {
				gittest.Write(t, ours, map[string]string{"b": "b2\n"})
				gittest.Git(t, ours, "commit", "-qam", "target: b2")
			}
			arm(t, theirs, marks)
			arm(t, ours, marks)
			c, err := PlanCommits(context.Background(), theirs, head, ours, t.TempDir())
			if err != nil {
				t.Fatalf("PlanCommits: %v", err)
			}
			if err := LandCommits(context.Background(), ours, c); err != nil {
				t.Fatalf("LandCommits: %v", err)
			}
			noMarks(t, marks)
			if got := gittest.Git(t, ours, "-c", "log.showSignature=false", "log", "-1", "--format=%s"); got != "run: a2" {
				t.Errorf("the target's last commit is %q, want the run's", got)
			}
			if got := gittest.Git(t, ours, "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "ls-files", "-s", "a"); !strings.Contains(got, gittest.Git(t, theirs, "-c", "core.fsmonitor=false", "rev-parse", "HEAD:a")) {
				t.Errorf("the target's index entry of a is %q, not the commit's", got)
			}
		})
	}
}

// Each key alone, so that one key's command failing does not hide
// another's: a plan and a replay of commits run none of it. Before the
// private git directory, the clean and process filters, core.hooksPath
// and .git/hooks ran (as root, in the daemon); the other keys were already
// kept off by the planner's flags (--no-ext-diff, --no-textconv,
// core.fsmonitor=false), and their cases keep them off.
func TestGit_RunsNoConfiguredCommandPerKey(t *testing.T) {
	keys := hostileKeys("MARKS")
	for k := range keys {
		if _, isEnabler := enablers["gpg.program"][k]; isEnabler || k == "filter.evil.required" {
			continue
		}
		t.Run(k, func(t *testing.T) {
			marks := t.TempDir()
			one := map[string]string{k: strings.ReplaceAll(keys[k], "MARKS", marks)}
			for ek, ev := range enablers[k] {
				one[ek] = ev
			}
			theirs, ours, head := gittest.Pair(t, map[string]string{"a": "a\n", "b": "b\n"})
			gittest.Write(t, theirs, map[string]string{"a": "a2\n"})
			gittest.Git(t, theirs, "commit", "-qam", "run: a2")
			gittest.Write(t, theirs, map[string]string{"new": "n\n"})
			gittest.Write(t, ours, map[string]string{"b": "b2\n"})
			gittest.Git(t, ours, "commit", "-qam", "target: b2")
			armWith(t, theirs, marks, one)
			armWith(t, ours, marks, one)
			if _, err := Plan(context.Background(), optsT(t, theirs, head, ours, t.TempDir())); err != nil {
				t.Errorf("Plan: %v", err)
			}
			c, err := PlanCommits(context.Background(), theirs, head, ours, t.TempDir())
			if err == nil {
				err = LandCommits(context.Background(), ours, c)
			}
			if err != nil {
				t.Errorf("commits: %v", err)
			}
			noMarks(t, marks)
		})
	}
}
