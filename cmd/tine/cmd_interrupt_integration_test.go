//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/testkit"
)

// manyFiles is how many small files the interrupted merges carry.
const manyFiles = 20000

// TestMerge_Interrupted: Ctrl-C (SIGINT) of tine merge of a fork that
// added 20,000 files leaves the target whole before or whole after the
// merge, says which in one line, exits 130 and leaves no merge temp
// (runs/RUN/merge-*, the journal, the staging directory in the target):
// mid-apply (many/ placed, by one rename, not yet committed) it rolls
// back, past the commit it finishes. Go's default SIGINT killed tine on
// the spot, silent, leaving the journal and temps to the next command. Through tine serve the interrupt reaches the daemon's
// work: it exited 130 silently while the daemon merged on.
func TestMerge_Interrupted(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	const rolledBack = "tine: interrupted: nothing was merged"
	const applied = "tine: interrupted after the merge was applied: f1 is merged into source"
	t.Run("MidApply", func(t *testing.T) {
		e, ws := manyFilesFork(t)
		r := e.run(call{vars: []string{"TINE_TEST_INTERRUPT_AT=merge:placed:0"}}, "merge", "f1", "--filesystem")
		checkInterruptedMerge(t, e, ws, r, rolledBack)
	})
	t.Run("AfterCommit", func(t *testing.T) {
		e, ws := manyFilesFork(t)
		r := e.run(call{vars: []string{"TINE_TEST_INTERRUPT_AT=merge:committed:0"}}, "merge", "f1", "--filesystem")
		checkInterruptedMerge(t, e, ws, r, applied)
	})
	t.Run("Daemon", func(t *testing.T) {
		e, ws := manyFilesFork(t)
		e.serve()
		target := e.runDir("source")
		r := e.interruptWhen(func() bool {
			_, err := os.Stat(filepath.Join(target, "merge.json"))
			return err == nil
		}, "merge", "f1", "--filesystem")
		if !strings.Contains(r.stderr, rolledBack) && !strings.Contains(r.stderr, applied) {
			t.Fatalf("interrupted through the daemon: %v, want one of %q, %q", r, rolledBack, applied)
		}
		want := rolledBack
		if strings.Contains(r.stderr, applied) {
			want = applied
		}
		t.Logf("through the daemon: %q", r.stderr)
		waitNoFile(t, filepath.Join(target, "merge.json"))
		checkInterruptedMerge(t, e, ws, r, want)
	})
}

// manyFilesFork makes a workspace and a fork f1 of its source that added
// manyFiles small files under many/.
func manyFilesFork(t *testing.T) (*env, string) {
	t.Helper()
	e := newEnv(t)
	ws := e.workspaceDir("app")
	writeTestFiles(t, ws, map[string]string{"a": "a\n"})
	e.ok("init", ws)
	e.ok("fork", "source", "--name", "f1")
	e.execSh("f1", "mkdir many && cd many && seq 1 "+strconv.Itoa(manyFiles)+" | split -l 1 -a 5 - f")
	return e, ws
}

// checkInterruptedMerge checks an interrupted merge's outcome: exit 130,
// the one line want on standard error, the target whole before (nothing
// was merged) or after, and no temp left.
func checkInterruptedMerge(t *testing.T, e *env, ws string, r result, want string) {
	t.Helper()
	if r.code != exitInterrupted {
		t.Errorf("exit status %d, want %d: %v", r.code, exitInterrupted, r)
	}
	if strings.Contains(r.stderr, "\r") {
		t.Errorf("progress off a terminal: %q", r.stderr)
	}
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); !slices.Contains(lines, want) {
		t.Errorf("stderr %q, want the line %q", r.stderr, want)
	}
	got, _ := os.ReadDir(filepath.Join(ws, "many"))
	merged := e.runRow("f1").Resolution == "merged"
	switch {
	case strings.Contains(want, "nothing was merged") && (len(got) != 0 || merged):
		t.Errorf("said nothing was merged, but the target has %d of the files (run merged: %v)", len(got), merged)
	case !strings.Contains(want, "nothing was merged") && (len(got) != manyFiles || !merged):
		t.Errorf("said merged, but the target has %d of %d files (run merged: %v)", len(got), manyFiles, merged)
	}
	var temps []string
	for _, pat := range []string{filepath.Join(e.home, "workspaces/*/runs/*/merge*"), filepath.Join(ws, ".tine-merge-*")} {
		m, _ := filepath.Glob(pat)
		temps = append(temps, m...)
	}
	if len(temps) != 0 {
		t.Errorf("left behind: %v", temps)
	}
}

// runDir returns the directory of run name in the state directory.
func (e *env) runDir(name string) string {
	e.t.Helper()
	r := e.runRow(name)
	return filepath.Join(e.home, "workspaces", r.Workspace, "runs", r.ID)
}

// runRow returns tine ls's row of run name.
func (e *env) runRow(name string) jsonLsRow {
	e.t.Helper()
	for _, r := range e.ls() {
		if r.Name == name {
			return r
		}
	}
	e.t.Fatalf("no run %s in tine ls", name)
	return jsonLsRow{}
}

// interruptWhen runs tine args and sends it SIGINT, as a Ctrl-C, once
// ready says so.
func (e *env) interruptWhen(ready func() bool, args ...string) result {
	e.t.Helper()
	cmd := exec.Command(tineBin, args...)
	cmd.Env = slices.Clone(e.vars)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	deadline := time.After(90 * time.Second)
wait:
	for {
		select {
		case err = <-done:
			e.t.Fatalf("tine %v ended before it was interrupted: %v\n%s", args, err, stderr.String())
		case <-deadline:
			cmd.Process.Kill()
			e.t.Fatalf("tine %v: nothing to interrupt for 90 s", args)
		case <-time.After(5 * time.Millisecond):
			if ready() {
				cmd.Process.Signal(syscall.SIGINT)
				break wait
			}
		}
	}
	select {
	case err = <-done:
	case <-time.After(90 * time.Second):
		cmd.Process.Kill()
		e.t.Fatalf("tine %v: still running 90 s after SIGINT", args)
	}
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	}
	return r
}

// waitNoFile waits until p is gone (the daemon's work winding down).
func waitNoFile(t *testing.T, p string) {
	t.Helper()
	for range 600 {
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("%s still there after 30 s", p)
}

// TestGC_RemovesInterruptedMergeTemp: a merge's scratch directory that an
// interrupted tine merge left in the fork's run directory (merge-ID, with
// staged content) is listed by tine doctor and removed by tine gc.
func TestGC_RemovesInterruptedMergeTemp(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws := e.workspaceDir("app")
	writeTestFiles(t, ws, map[string]string{"a": "a\n"})
	e.ok("init", ws)
	e.ok("fork", "source", "--name", "f1")
	temp := filepath.Join(e.runDir("f1"), "merge-"+tine.NewID(""))
	writeTestFiles(t, temp, map[string]string{"staged/x": "x\n"})
	var doc struct {
		Leftovers []struct{ Kind, Path string } `json:"leftovers"`
	}
	e.run(call{}, "doctor", "--json") // the sweep of doctor's own open may remove it first
	if _, err := os.Stat(temp); err == nil {
		r := e.run(call{}, "doctor", "--json")
		json.Unmarshal([]byte(r.stdout), &doc)
		if !slices.ContainsFunc(doc.Leftovers, func(l struct{ Kind, Path string }) bool { return l.Path == temp }) {
			t.Errorf("tine doctor does not list %s: %s", temp, r.stdout)
		}
	}
	writeTestFiles(t, temp, map[string]string{"staged/x": "x\n"})
	r := e.tine("gc")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	if _, err := os.Stat(temp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("tine gc left %s (%v): %v", temp, err, r)
	}
}

// TestRelease_Interrupted: Ctrl-C of tine release before its commit
// leaves the workspace managed, its files in place; after it, the release
// finishes: one line says which, exit 130. tine was killed on the spot.
func TestRelease_Interrupted(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	for _, c := range []struct {
		at, line string
		managed  bool
	}{
		{"release:0", "tine: interrupted: nothing was released", true},
		{"release:1", "tine: interrupted after the release was committed", false},
	} {
		t.Run(c.at, func(t *testing.T) {
			e, ws := interruptedEnv(t)
			r := e.run(call{vars: []string{"TINE_TEST_INTERRUPT_AT=" + c.at}}, "release", "--unmerged", ws)
			if r.code != exitInterrupted || !strings.HasPrefix(r.stderr, c.line) || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("%v, want exit %d and the one line %q", r, exitInterrupted, c.line)
			}
			if managed := len(e.ls()) > 0; managed != c.managed {
				t.Errorf("managed after the interrupt: %v, want %v", managed, c.managed)
			}
			if b, err := os.ReadFile(filepath.Join(ws, "c")); err != nil || string(b) != "new\n" {
				t.Errorf("the source's file c: %q, %v", b, err)
			}
		})
	}
}

// TestFork_Interrupted: Ctrl-C of tine fork before its record undoes it:
// no fork, no layer or view left, the source's files as they were.
func TestFork_Interrupted(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e, ws := interruptedEnv(t)
	layers, _ := filepath.Glob(filepath.Join(e.home, "workspaces/*/layers/*"))
	r := e.run(call{vars: []string{"TINE_TEST_INTERRUPT_AT=fork:0"}}, "fork", "source", "--name", "f2")
	if r.code != exitInterrupted || r.stderr != "tine: interrupted: no fork was made\n" {
		t.Errorf("%v, want exit %d and the one line 'tine: interrupted: no fork was made'", r, exitInterrupted)
	}
	if n := len(e.ls()); n != 2 {
		t.Errorf("%d runs after the interrupted fork, want the source and f1", n)
	}
	after, _ := filepath.Glob(filepath.Join(e.home, "workspaces/*/layers/*"))
	if len(after) != len(layers) {
		t.Errorf("layers %v after the interrupted fork, want %v", after, layers)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "c")); err != nil || string(b) != "new\n" {
		t.Errorf("the source's file c: %q, %v", b, err)
	}
}

// TestMerge_ProgressOnTerminal: a merge of 20,000 files that takes more
// than a second draws one updating line on a terminal's standard error
// (staging, applying), cleared before the result; off a terminal
// (TestMerge_Interrupted's runs) nothing of it is written.
func TestMerge_ProgressOnTerminal(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e, _ := manyFilesFork(t)
	e.vars = append(e.vars, progressAfterEnv+"=0s") // the line at once, however fast the machine
	screen := stderrOnTerminal(t, e, "merge", "f1", "--filesystem")
	for _, want := range []string{"\r\033[Kmerging f1: staging ", "\r\033[Kmerging f1: applying 1/1 (100%)" /* many/, placed whole */, "\r\033[K"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the terminal shows %q, want %q in it", clip(screen), want)
		}
	}
	if !strings.HasSuffix(screen, "\r\033[K") {
		t.Errorf("the progress line is not cleared at the end: %q", clip(screen))
	}
}
