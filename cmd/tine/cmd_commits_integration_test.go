//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/forkrun"
)

// agentCommit is what an agent that commits its work runs.
const agentCommit = "echo effect > effect.txt && git add effect.txt && git -c user.name=agent -c user.email=a@a commit -qm 'agent: add effect.txt'"

// TestCLI_CommitsTravelWithTheWork is issue 26's "the agent's commits are
// dropped": a fork whose agent committed, merged by fork-run's auto mode
// and by tine choose --merge, lands in the source's history with its
// message, nothing left untracked. Before, the source got effect.txt
// untracked and git log unchanged.
func TestCLI_CommitsTravelWithTheWork(t *testing.T) {
	e, ws := gitWorkspace(t, map[string]string{"A": "a\n"}, "", 2)
	var g struct {
		Group struct {
			ID string `json:"id"`
		} `json:"group"`
	}
	e.okJSON(&g, "fork", "source", "-n", "1", "--name", "chosen", "--json")
	e.execSh("chosen", agentCommit)
	out := e.ok("choose", g.Group.ID, "chosen", "--merge")
	if !strings.Contains(out, "commits: 1 fast-forwarded") {
		t.Errorf("choose --merge:\n%s", out)
	}
	requireHead(t, ws, "agent agent: add effect.txt", "")

	// fork-run --merge-mode auto: the source's HEAD moved meanwhile (the
	// commit above), so the winner's commit is replayed onto it.
	script := filepath.Join(publicDir(t), "agent.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nset -e\n"+strings.ReplaceAll(agentCommit, "effect", "second")+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	rep, r := e.forkRunJSON("source", "-n", "1", "--prompt", "p", "--agent-cmd", script, "--merge-mode", "auto", "--confidence", "0.1")
	if r.code != 0 || rep.Outcome != forkrun.OutcomeMerged {
		t.Fatalf("fork-run: outcome %s (%s)\n%v", rep.Outcome, rep.OutcomeDetail, r)
	}
	requireHead(t, ws, "agent agent: add second.txt", "")
	if log := hostCmd(t, ws, "git", "log", "--format=%s", "-3"); log != "agent: add second.txt\nagent: add effect.txt\ninit\n" {
		t.Errorf("source's history: %q", log)
	}
	if got := rep.Forks[0].FilesChanged; got != 1 {
		t.Errorf("fork-run counted %d changed file(s) for a one-file commit (.git internals counted?)", got)
	}
}

// TestCLI_CommitConflictWritesNothing: a fork whose files merge cleanly but
// whose commit does not apply on the target's HEAD is a conflict (exit 9,
// nothing written); --no-commits squashes its work into the working tree.
func TestCLI_CommitConflictWritesNothing(t *testing.T) {
	e, ws := gitWorkspace(t, map[string]string{"A": "a\n"}, "", 1)
	git := "git -c user.name=t -c user.email=t@t "
	// The fork commits a change to A, then undoes it uncommitted: its files
	// leave A as it was, its commit changes it.
	e.execSh("source-1", "echo fork > A && "+git+"commit -qam 'fork: A' && echo a > A && echo n > N")
	hostSh(t, ws, "echo source > A && "+git+"commit -qam 'source: A'")
	head := strings.TrimSpace(hostCmd(t, ws, "git", "rev-parse", "HEAD"))
	r := e.tine("merge", "source-1")
	if r.code != 9 || !strings.Contains(r.stderr, "fork: A") || !strings.Contains(r.stderr, "--no-commits") {
		t.Errorf("merge of a conflicting commit: %v", r)
	}
	if _, err := os.Stat(filepath.Join(ws, "N")); !os.IsNotExist(err) {
		t.Errorf("a conflicting merge wrote N: %v", err)
	}
	if now := strings.TrimSpace(hostCmd(t, ws, "git", "rev-parse", "HEAD")); now != head {
		t.Errorf("a conflicting merge moved HEAD to %s", now)
	}
	var res engine.MergeResult
	e.okJSON(&res, "merge", "source-1", "--no-commits", "--json")
	if res.Commits != nil || readTestFile(t, ws, "N") != "n\n" || readTestFile(t, ws, "A") != "source\n" {
		t.Errorf("merge --no-commits: commits %+v, N %q, A %q", res.Commits, readTestFile(t, ws, "N"), readTestFile(t, ws, "A"))
	}
	requireHead(t, ws, "t source: A", "?? N")
}

// requireHead checks the subject and author of the HEAD commit of the
// repository at dir, and its git status.
func requireHead(t *testing.T, dir, authorSubject, status string) {
	t.Helper()
	if log := strings.TrimSpace(hostCmd(t, dir, "git", "log", "-1", "--format=%an %s")); log != authorSubject {
		t.Errorf("HEAD is %q, want %q", log, authorSubject)
	}
	if st := strings.TrimSpace(hostCmd(t, dir, "git", "status", "--porcelain")); st != status {
		t.Errorf("git status %q, want %q", st, status)
	}
}
