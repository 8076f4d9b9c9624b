//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tinehq/tine/internal/testkit"
)

// TestCLI_InterruptedCommandCalm: a fork, checkpoint, rollback or promote
// killed (SIGKILL) at each of its steps leaves directories the store never
// recorded; the next command (tine ls) removes them with at most a calm
// line naming the interrupted command, and nothing goes to the quarantine.
// They used to be quarantined, each with a warning that read like a
// damaged store. A directory no command journaled is still quarantined
// with the warning.
func TestCLI_InterruptedCommandCalm(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	ops := map[string][]string{
		"fork":       {"fork", "source", "--name", "f2"},
		"checkpoint": {"checkpoint", "source"},
		"rollback":   {"rollback", "source", "--to", "cp"},
		"promote":    {"promote", "--drop-source-changes", "f1"},
	}
	for _, op := range []string{"fork", "checkpoint", "rollback", "promote"} {
		t.Run(op, func(t *testing.T) {
			for n := 0; ; n++ {
				if done := killAt(t, op, n, ops[op]); done {
					break
				}
			}
		})
	}
	t.Run("unknown", func(t *testing.T) {
		e, _ := interruptedEnv(t)
		var wsID string
		for _, r := range e.ls() {
			wsID = r.Workspace
		}
		stray := filepath.Join(e.home, "workspaces", wsID, "layers", "lstray")
		writeTestFiles(t, stray, map[string]string{"f": "?"})
		r := e.tine("ls")
		if !strings.Contains(r.stderr, "warning") || !strings.Contains(r.stderr, "no record of this layer") {
			t.Errorf("a layer no command made: stderr %q, want the quarantine's warning", r.stderr)
		}
	})
}

// interruptedEnv makes a workspace with a source whose files changed since
// its checkpoint cp, and a fork f1 of it that changed a file.
func interruptedEnv(t *testing.T) (*env, string) {
	t.Helper()
	e := newEnv(t)
	ws := e.workspaceDir("app")
	writeTestFiles(t, ws, map[string]string{"a": "a\n", "d/b": "b\n"})
	e.ok("init", ws)
	e.ok("checkpoint", "source", "--label", "cp")
	e.ok("fork", "source", "--name", "f1")
	e.execSh("f1", "echo fork > a")
	e.execSh("source", "echo source > d/b; echo new > c")
	return e, ws
}

// killAt runs tine args killed at step n of op, then tine ls, and checks
// what ls says; it reports whether the command ran to its end instead.
func killAt(t *testing.T, op string, n int, args []string) bool {
	e, _ := interruptedEnv(t)
	r := e.run(call{vars: []string{"TINE_TEST_KILL_AT=" + op + ":" + strconv.Itoa(n)}}, args...)
	if r.code == 0 {
		return true
	}
	if r.code != 137 && r.code != -1 {
		t.Fatalf("killed at %s:%d: %v", op, n, r)
	}
	ls := e.tine("ls")
	if ls.code != 0 {
		t.Fatalf("tine ls after %s killed at step %d: %v", op, n, ls)
	}
	for _, line := range strings.Split(strings.TrimSpace(ls.stderr), "\n") {
		calm := line == "" || strings.HasPrefix(line, "tine: removed what an interrupted tine "+op+" left") ||
			strings.HasPrefix(line, "tine: run source: finishing an interrupted rollback")
		if !calm {
			t.Errorf("tine ls after %s killed at step %d says %q, want at most a calm note", op, n, line)
		}
	}
	if q, _ := os.ReadDir(filepath.Join(e.home, "quarantine")); len(q) != 0 {
		t.Errorf("after %s killed at step %d the quarantine holds %d entries, want none", op, n, len(q))
	}
	return false
}
