//go:build linux

package main

// Crash trials: the real tine is killed (SIGKILL) at random moments of a
// command, and the next command must find nothing lost: the source's
// files exactly as before the command or exactly as after it, every live
// fork intact, no mount, run directory or layer left that the records do
// not name. TestCLI_KillDuringFork does it for fork; these for the other
// commands that change the store.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine/internal/testkit"
)

// crashTrials is how many times each command is killed.
const crashTrials = 20

// crashTrial is one command to kill: made ready by setup, which returns
// its arguments and the trees the source may hold after it (before and
// after), and the fork it works on ("" for none) with that fork's tree.
type crashTrial struct {
	args     []string
	outcomes []tree // what the source may hold once the next command ran
	fork     string // a fork that, if still live, must hold forkTree
	forkTree tree
}

// crashCase is one command's trials: setup prepares the i-th.
type crashCase struct {
	name  string
	git   bool
	setup func(e *env, ws string, i int) crashTrial
	after func(e *env, ws string, tr crashTrial) // tidies between trials
}

// TestCrash_Kill kills merge (each scope), promote, rollback, checkpoint,
// discard and release at random delays (seeded: TINE_CRASH_SEED replays a
// run; the seed is logged) within the time the command takes, 20 times
// each, and checks what the next command leaves.
func TestCrash_Kill(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("TINE_CRASH_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("TINE_CRASH_SEED=%d", seed)
	for i, c := range crashCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			crashCommand(t, c, rand.New(rand.NewPCG(seed, uint64(i))))
		})
	}
}

// crashCommand runs c's trials: one run to time the command, then
// crashTrials runs killed at delays drawn from rng up to that time.
func crashCommand(t *testing.T, c crashCase, rng *rand.Rand) {
	e := newEnv(t)
	ws := raceWorkspace(e, c.git)
	tr := c.setup(e, ws, 0)
	start := time.Now()
	if r := e.tine(tr.args...); r.code != 0 {
		t.Fatalf("tine %v: %v", tr.args, r)
	}
	took := time.Since(start)
	if c.after != nil {
		c.after(e, ws, tr)
	}
	var killed []string
	for i := 1; i <= crashTrials; i++ {
		tr := c.setup(e, ws, i)
		delay := time.Duration(rng.Int64N(int64(took) + 1))
		if killAfter(t, e, tr.args, delay) {
			killed = append(killed, delay.Round(time.Millisecond).String())
		}
		checkCrash(t, e, ws, tr, fmt.Sprintf("trial %d (killed after %s)", i, delay.Round(time.Millisecond)))
		if t.Failed() {
			t.FailNow()
		}
		if c.after != nil {
			c.after(e, ws, tr)
		}
	}
	t.Logf("tine %s takes %s; %d of %d killed before the end, at %v", c.name, took.Round(time.Millisecond), len(killed), crashTrials, killed)
}

// killAfter starts the real tine with args and kills it after delay; it
// reports whether the kill came before the command ended.
func killAfter(t *testing.T, e *env, args []string, delay time.Duration) bool {
	t.Helper()
	cmd := exec.Command(tineBin, args...)
	cmd.Env = e.vars
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(delay)
	cmd.Process.Kill()
	err := cmd.Wait()
	if err != nil && !strings.Contains(err.Error(), "killed") {
		t.Errorf("tine %v: %v\n%s", args, err, stderr.String())
	}
	return err != nil
}

// checkCrash checks, after a killed command, what the next command (tine
// ls, which sweeps) leaves: the source as one of tr's outcomes, tr's fork
// intact if live, and nothing in the store the records do not name.
func checkCrash(t *testing.T, e *env, ws string, tr crashTrial, what string) {
	t.Helper()
	if r := e.tine("ls", "--json"); r.code != 0 {
		t.Fatalf("%s: the first command after the kill: %v", what, r)
	}
	got := withoutGit(mustSnapshot(t, ws))
	if !slices.ContainsFunc(tr.outcomes, func(w tree) bool { return len(treeDiffs(withoutGit(w), got, compareOpts{})) == 0 }) {
		requireSameTree(t, what+": the source (neither as before nor as after)", withoutGit(tr.outcomes[0]), got, compareOpts{})
		return
	}
	var states []jsonState
	e.okJSON(&states, "tree", "--json")
	var mounts []string
	for _, st := range states {
		if st.Workspace.Path == ws {
			mounts = append(mounts, ws)
		}
		wsDir := filepath.Join(e.home, "workspaces", st.Workspace.ID)
		var live []string
		for _, r := range st.Runs {
			if r.State != "active" {
				continue
			}
			live = append(live, r.ID)
			view := filepath.Join(wsDir, "runs", r.ID, "view")
			mounts = append(mounts, view)
			if r.Name == tr.fork && tr.forkTree != nil {
				requireSameTree(t, what+": fork "+r.Name, withoutGit(tr.forkTree), withoutGit(mustSnapshot(t, view)), compareOpts{})
			}
		}
		if got := dirNames(t, filepath.Join(wsDir, "runs")); !slices.Equal(got, sortedCopy(live)) {
			t.Errorf("%s: run directories %q, want the live runs %q", what, got, sortedCopy(live))
		}
		var layers []string
		for _, v := range st.Versions {
			layers = append(layers, v.Layers...)
		}
		if got := dirNames(t, filepath.Join(wsDir, "layers")); !slices.Equal(got, slices.Compact(sortedCopy(layers))) {
			t.Errorf("%s: layer directories %q, want those of the recorded versions %q", what, got, slices.Compact(sortedCopy(layers)))
		}
	}
	if got := mountPoints(e.tmp); !slices.Equal(sortedCopy(got), sortedCopy(mounts)) {
		t.Errorf("%s: mounts %q, want %q", what, got, mounts)
	}
}

// withoutGit is tr without .git (which a git-scope merge may touch
// either way) and without the root's own entry (its times).
func withoutGit(tr tree) tree {
	out := tree{}
	for p, e := range tr {
		if p != "." && p != ".git" && !strings.HasPrefix(p, ".git/") {
			out[p] = e
		}
	}
	return out
}

// forkWithWork forks the source as name and changes the fork's files:
// readme rewritten, a file added (in a directory of its own).
func forkWithWork(e *env, name string) (view string) {
	e.t.Helper()
	e.ok("fork", "source", "--name", name)
	view = e.path(name)
	if err := os.WriteFile(filepath.Join(view, "readme"), []byte("from "+name+"\n"), 0o644); err != nil {
		e.t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(view, "new", name), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(view, "new", name, "f"), []byte(name+"\n"), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return view
}

// mergeTrial forks with work and merges it with the scope's flags.
func mergeTrial(scope ...string) func(e *env, ws string, i int) crashTrial {
	return func(e *env, ws string, i int) crashTrial {
		name := fmt.Sprintf("m%d", i)
		view := forkWithWork(e, name)
		args := append([]string{"merge", name}, scope...)
		if scope[0] == "--paths" {
			args = []string{"merge", name, "--paths", "readme", "--paths", "new"}
		}
		before, after := mustSnapshot(e.t, ws), mustSnapshot(e.t, view)
		return crashTrial{args: args, outcomes: []tree{before, after}, fork: name, forkTree: after}
	}
}

// discardFork discards the trial's fork if it is still there.
func discardFork(e *env, _ string, tr crashTrial) {
	e.tine("discard", "--unmerged", "--while-running", tr.fork)
}

func crashCases() []crashCase {
	return []crashCase{
		{name: "merge-filesystem", setup: mergeTrial("--filesystem"), after: discardFork},
		{name: "merge-paths", setup: mergeTrial("--paths"), after: discardFork},
		{name: "merge-git", git: true, setup: mergeTrial("--git"), after: discardFork},
		{name: "promote", setup: func(e *env, ws string, i int) crashTrial {
			name := fmt.Sprintf("p%d", i)
			view := forkWithWork(e, name)
			return crashTrial{args: []string{"promote", name}, outcomes: []tree{mustSnapshot(e.t, ws), mustSnapshot(e.t, view)}}
		}},
		{name: "rollback", setup: func(e *env, ws string, i int) crashTrial {
			label := fmt.Sprintf("cp%d", i)
			e.ok("checkpoint", "source", "--label", label)
			at := mustSnapshot(e.t, ws)
			if err := os.WriteFile(filepath.Join(ws, "readme"), []byte("after "+label+"\n"), 0o644); err != nil {
				e.t.Fatal(err)
			}
			return crashTrial{args: []string{"rollback", "source", "--to", label}, outcomes: []tree{mustSnapshot(e.t, ws), at}}
		}},
		{name: "checkpoint", setup: func(e *env, ws string, i int) crashTrial {
			if err := os.WriteFile(filepath.Join(ws, "readme"), []byte(fmt.Sprintf("change %d\n", i)), 0o644); err != nil {
				e.t.Fatal(err)
			}
			return crashTrial{args: []string{"checkpoint", "source"}, outcomes: []tree{mustSnapshot(e.t, ws)}}
		}},
		{name: "discard", setup: func(e *env, ws string, i int) crashTrial {
			name := fmt.Sprintf("d%d", i)
			view := forkWithWork(e, name)
			return crashTrial{args: []string{"discard", "--unmerged", "--while-running", name}, outcomes: []tree{mustSnapshot(e.t, ws)}, fork: name, forkTree: mustSnapshot(e.t, view)}
		}},
		{name: "release", setup: func(e *env, ws string, i int) crashTrial {
			if r := e.tine("path", "source"); r.code != 0 {
				e.ok("init", "--backend", "overlay", ws)
			}
			if err := os.WriteFile(filepath.Join(ws, "readme"), []byte(fmt.Sprintf("release %d\n", i)), 0o644); err != nil {
				e.t.Fatal(err)
			}
			return crashTrial{args: []string{"release", ws}, outcomes: []tree{mustSnapshot(e.t, ws)}}
		}},
	}
}
