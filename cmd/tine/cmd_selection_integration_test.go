//go:build linux

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine/bench/selection"
	"github.com/tinehq/tine/evidence"
	"github.com/tinehq/tine/internal/testkit"
)

// TestSelectionBenchmark runs a few tasks of the selection benchmark (one
// per language, plus one only the holdout can decide and one where a wrong
// fix brings a test asserting its own answer) through fork-run and
// checks that the heuristic judge, on the evidence without the holdout,
// picks a correct candidate or abstains, never merging a wrong one; that
// it abstains on the indistinct task; and that the evidence says what the
// candidates are. The full benchmark is bench/selection/run.sh.
func TestSelectionBenchmark(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	for _, bin := range []string{"python3", "go"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("the benchmark's tasks need %s", bin)
		}
	}
	want := map[string]bool{"01-python-fact": true, "12-go-max": true, "21-shell-fact": true, "22-shell-upper": true, "35-shell-max3-disputed": true}
	e := newEnv(t)
	r := &selection.Runner{Tine: tineBin, Home: e.home, Dir: t.TempDir(), Env: e.vars, Keep: true}
	var outs []*selection.Outcome
	for _, task := range selection.Tasks() {
		if !want[task.Name] {
			continue
		}
		o, err := r.Run(context.Background(), task)
		if err != nil {
			t.Fatalf("%s: %v", task.Name, err)
		}
		e.ws = append(e.ws, r.Repo(task))
		outs = append(outs, o)
		checkEvidence(t, o)
	}
	checkShown(t, e, outs[0])
	if len(outs) != len(want) {
		t.Fatalf("ran %d tasks, want %d", len(outs), len(want))
	}
	if bad := selection.Mislabelled(outs); len(bad) > 0 {
		t.Errorf("holdouts disagree with the candidates' known quality: %q", bad)
	}
	res := selection.Score(outs)
	h := res[0] // the heuristic on the evidence without the holdout
	if h.WrongMerges != 0 || h.IndistinctAbstained != h.Indistinct || h.DecidedCorrect < 2 {
		t.Errorf("%s: %+v; want no wrong merge, abstention on every indistinct task, at least 2 correct merges", h.Judge, h)
	}
}

// checkEvidence checks what the evidence says about each kind of candidate.
func checkEvidence(t *testing.T, o *selection.Outcome) {
	t.Helper()
	for _, f := range o.Report.Forks {
		ev, kind := f.Evidence, o.Task.Kind(f.Approach)
		if ev == nil {
			t.Errorf("%s %s (%s): no evidence; state %s: %s; agent's stderr: %q", o.Task.Name, f.Name, kind, f.State, f.Reason, f.AgentStderr)
			continue
		}
		var bad bool
		switch kind {
		case selection.Rewrite:
			bad = ev.Validity != evidence.Valid
		case selection.HardCode:
			bad = !hasFlag(ev, evidence.TestLiterals) || len(ev.CrossFailed) == 0
		case selection.BreakOther:
			bad = ev.Regression == nil || ev.Regression.Passed || !hasFlag(ev, evidence.OutsideScope)
		case selection.Minimal:
			bad = len(ev.Flags) > 0 || ev.Regression == nil || !ev.Regression.Passed
		}
		if bad {
			t.Errorf("%s %s (%s): evidence %v", o.Task.Name, f.Name, kind, ev.Lines())
		}
	}
}

// checkShown checks that summary, compare and export show the evidence of
// o's forks (a task with a hard-coding candidate and a rewrite).
func checkShown(t *testing.T, e *env, o *selection.Outcome) {
	t.Helper()
	var hard string
	for _, f := range o.Report.Forks {
		if o.Task.Kind(f.Approach) == selection.HardCode {
			hard = f.Name
		}
	}
	if hard == "" {
		t.Fatalf("%s has no hard-coding candidate", o.Task.Name)
	}
	ref := o.Task.Name + "/" + hard
	for what, out := range map[string]string{
		"summary": e.ok("summary", ref),
		"compare": e.ok("compare", o.Report.Group),
		"export":  e.ok("export", o.Report.Group),
	} {
		for _, want := range map[string][]string{
			"summary": {"evidence:", "red flag: test literals in calc.py", "holdout: failed", "fails the valid tests of"},
			"compare": {"EVIDENCE", "holdout failed, regression passed, fails 1 rival's tests, 1 red flag(s)", "own tests valid"},
			"export":  {"Evidence:", "red flag: test literals in calc.py", "own tests: valid"},
		}[what] {
			if !strings.Contains(out, want) {
				t.Errorf("%s lacks %q:\n%s", what, want, out)
			}
		}
	}
}

func hasFlag(ev *evidence.Fork, k evidence.FlagKind) bool {
	for _, f := range ev.Flags {
		if f.Kind == k {
			return true
		}
	}
	return false
}

// The holdout runs in every fork once the agents ended and is never shown
// to them: not in their environment, arguments or files; the regression
// command and the declared checks run beside it, and all are in the
// report's evidence.
func TestForkRun_HoldoutHiddenFromAgents(t *testing.T) {
	e, _ := forkRunWorkspace(t, "")
	holdout := filepath.Join(t.TempDir(), "holdout.sh")
	if err := os.WriteFile(holdout, []byte("echo HOLDOUT-RAN; grep -q OK app.txt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	agent := `env; ls -a; if [ "$TINE_FORK_INDEX" = 0 ]; then echo 'status OK' > app.txt; else echo 'status NO' > app.txt; fi`
	rep, r := e.forkRunJSON("source", "--prompt", "fix app.txt", "-n", "2", "--agent-cmd", agent, "--merge-mode", "manual",
		"--holdout-test", "sh "+holdout, "--regression-test", "test -s app.txt", "--check", "test -f app.txt", "--check", "grep -q OK app.txt")
	if r.code != 0 || len(rep.Forks) != 2 {
		t.Fatalf("fork-run: %v", r)
	}
	for i, f := range rep.Forks {
		log, err := os.ReadFile(f.AgentLog)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(log), "holdout") || strings.Contains(string(log), "HOLDOUT") {
			t.Errorf("%s: the agent saw the holdout:\n%s", f.Name, log)
		}
		ev := f.Evidence
		if ev == nil || ev.Holdout == nil || ev.Regression == nil {
			t.Fatalf("%s: evidence %+v; want holdout and regression", f.Name, ev)
		}
		if ev.Holdout.Passed != (i == 0) || !strings.Contains(ev.Holdout.Output, "HOLDOUT-RAN") || !ev.Regression.Passed {
			t.Errorf("%s: holdout %+v regression %+v; want the holdout to pass in the first fork only", f.Name, ev.Holdout, ev.Regression)
		}
		if len(ev.Checks) != 2 || !ev.Checks[0].Passed || ev.Checks[1].Passed != (i == 0) {
			t.Errorf("%s: checks %v; want 2, the second passing in the first fork only", f.Name, ev.Lines())
		}
	}
	if rep.Winner != "source-1" || !strings.Contains(rep.Verdict.Rationale, "holdout failed") {
		t.Errorf("winner %s: %s; want source-1, its rival penalised for the holdout", rep.Winner, rep.Verdict.Rationale)
	}
}
