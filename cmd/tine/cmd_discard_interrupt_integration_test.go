//go:build linux

package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine/internal/testkit"
)

// TestDiscard_Interrupted: Ctrl-C (SIGINT) of tine discard before its mark
// leaves the fork live, its files in place; after it, the discard finishes
// removing the fork's files. One line says which, exit 130, nothing of
// the fork's directory left. tine discard did not handle SIGINT (Go's
// default killed it on the spot, silent, leaving a half-removed delta to
// the next command); through tine serve the client dropped its request
// and said nothing was discarded while the daemon discarded on.
func TestDiscard_Interrupted(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	for _, c := range []struct {
		at, line string
		live     bool
	}{
		{"discard:0", "tine: interrupted: nothing was discarded", true},
		{"discard:1", "tine: interrupted after the discard was committed: f1 discarded", false},
	} {
		t.Run(c.at, func(t *testing.T) {
			e, _ := manyFilesFork(t)
			dir := e.runDir("f1")
			r := e.run(call{vars: []string{"TINE_TEST_INTERRUPT_AT=" + c.at}}, "discard", "--unmerged", "f1")
			checkInterruptedDiscard(t, e, r, dir, c.line, c.live)
		})
	}
	t.Run("Daemon", func(t *testing.T) {
		e, _ := manyFilesFork(t)
		e.serve()
		dir := e.runDir("f1")
		row := e.runRow("f1")
		// A process that ignores SIGTERM makes stopping f1, after the
		// discard's commit, last the stop's grace period: the window in
		// which the interrupt lands (the files go to the trash after it).
		e.execSh("f1", "(trap '' TERM; exec sleep 60) >/dev/null 2>&1 &")
		mark := filepath.Join(e.home, "workspaces", row.Workspace, "discarded", row.ID+".json")
		r := e.interruptWhen(func() bool { // the discard is committed
			_, err := os.Stat(mark)
			return err == nil
		}, "discard", "--unmerged", "f1")
		waitNoFile(t, dir)
		checkInterruptedDiscard(t, e, r, dir, "tine: interrupted after the discard was committed: f1 discarded", false)
	})
}

// checkInterruptedDiscard checks an interrupted discard of f1: exit 130,
// the one line want on standard error, f1 live with its files or
// discarded with its directory gone.
func checkInterruptedDiscard(t *testing.T, e *env, r result, dir, want string, live bool) {
	t.Helper()
	if r.code != exitInterrupted || strings.TrimSpace(r.stderr) != want {
		t.Errorf("%v, want exit %d and the one line %q", r, exitInterrupted, want)
	}
	state := ""
	for _, row := range e.ls() {
		if row.Name == "f1" {
			state = row.State
		}
	}
	_, err := os.Stat(dir)
	switch {
	case live && (state != "active" || err != nil):
		t.Errorf("said nothing was discarded, but f1 is %q and its directory: %v", state, err)
	case live:
		if got, _ := os.ReadDir(filepath.Join(e.path("f1"), "many")); len(got) != manyFiles {
			t.Errorf("said nothing was discarded, but f1 has %d of %d files", len(got), manyFiles)
		}
	case state == "active" || !errors.Is(err, os.ErrNotExist):
		t.Errorf("said discarded, but f1 is %q and its directory %s: %v", state, dir, err)
	}
}

// TestDiscard_ManyFilesReturnsBeforeDeleting: a discard of a fork that
// added 20,000 files returns once the fork's directory is renamed into the
// trash, with nothing to show on a terminal (issue 24: a discard cost the
// removal of its delta, shown by a progress line); the files are deleted
// afterwards, by tine gc --trash here.
func TestDiscard_ManyFilesReturnsBeforeDeleting(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e, _ := manyFilesFork(t)
	e.vars = append(e.vars, "TINE_TRASH=keep")
	if screen := stderrOnTerminal(t, e, "discard", "--unmerged", "f1"); screen != "" {
		t.Errorf("the terminal shows %q, want nothing: the discard removes nothing before returning", clip(screen))
	}
	trash := e.trashOf()
	if len(trash) != 1 {
		t.Fatalf("the trash holds %v, want f1's directory", trash)
	}
	if got, _ := os.ReadDir(filepath.Join(e.home, "trash", trash[0], "upper", "many")); len(got) != manyFiles {
		t.Errorf("f1's delta in the trash has %d of %d files", len(got), manyFiles)
	}
	e.ok("gc", "--trash")
	if trash := e.trashOf(); len(trash) != 0 {
		t.Errorf("tine gc --trash left %v", trash)
	}
}
