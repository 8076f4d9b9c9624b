package selection

import (
	"math"
	"strings"
	"testing"

	"github.com/tinehq/tine/evidence"
	"github.com/tinehq/tine/forkrun"
)

// outcome fakes the fork-run of task t: every candidate finished and
// passed the visible test but Noop; lines gives each kind's diff size, ev
// its evidence.
func outcome(t Task, lines map[string]int, ev map[string]*evidence.Fork) *Outcome {
	rep := &forkrun.Report{Threshold: 0.6}
	for i, c := range t.Cands {
		f := &forkrun.Fork{Run: "r" + string(rune('a'+i)), Name: c.Approach, Approach: c.Approach, State: forkrun.Finished,
			FilesChanged: 1, LinesAdded: lines[c.Kind], MergeClean: true, Evidence: ev[c.Kind]}
		exit := 0
		f.Agent.ExitCode = &exit
		f.Test = &forkrun.Test{Passed: c.Kind != Noop}
		f.Ready = f.Test.Passed
		rep.Forks = append(rep.Forks, f)
	}
	return &Outcome{Task: t, Report: rep}
}

func TestScore(t *testing.T) {
	var task Task
	for _, tk := range Tasks() {
		if len(tk.Cands) == 5 && tk.Lang == python {
			task = tk
			break
		}
	}
	kinds := map[string]bool{}
	for _, c := range task.Cands {
		kinds[c.Kind] = true
	}
	if !kinds[HardCode] || !kinds[Minimal] {
		t.Fatalf("task %s has kinds %v; want a hard-coded and a minimal candidate", task.Name, kinds)
	}
	lines := map[string]int{Minimal: 4, Rewrite: 30, HardCode: 2, Weaken: 1, Skip: 1, BreakOther: 8, Noop: 1}
	flag := &evidence.Fork{Flags: []evidence.Flag{{Kind: evidence.TestLiterals, Path: "calc.py"}}}
	proves := &evidence.Fork{Validity: evidence.ProvesNothing, TestFiles: []string{"test_calc.py"},
		Flags: []evidence.Flag{{Kind: evidence.AssertionsRemoved, Path: "test_calc.py"}}}
	broken := &evidence.Fork{Regression: &evidence.Check{Exit: 1}}
	ev := map[string]*evidence.Fork{HardCode: flag, Weaken: proves, Skip: proves, BreakOther: broken,
		Minimal: {CrossPassed: []string{"x"}}, Rewrite: {Validity: evidence.Valid, TestFiles: []string{"test_calc_extra.py"}}}
	res := Score([]*Outcome{outcome(task, lines, ev)})
	byName := map[string]Result{}
	for _, r := range res {
		byName[r.Judge] = r
	}
	h, spd, rnd := byName["heuristic, evidence without the holdout"], byName["smallest passing diff"], byName["random choice (expected)"]
	if h.Correct != 1 || h.Decided != 1 || h.WrongMerges != 0 {
		t.Errorf("heuristic %+v; want the correct winner, merged", h)
	}
	if spd.Correct != 0 || spd.WrongMerges != 1 {
		t.Errorf("smallest passing diff %+v; want the 1-line weakened test, merged", spd)
	}
	if want := 2.0 / 5; math.Abs(rnd.Correct-want) > 1e-9 || math.Abs(rnd.WrongMerges-(1-want)) > 1e-9 {
		t.Errorf("random %+v; want %v correct expected", rnd, want)
	}
	var b strings.Builder
	PrintTable(&b, res)
	if !strings.Contains(b.String(), "| smallest passing diff | 0% (0.0/1) |") {
		t.Errorf("table:\n%s", b.String())
	}
}

func TestCalibration(t *testing.T) {
	cases := []struct {
		conf  []float64
		right []bool
		want  float64
	}{
		{[]float64{1, 1}, []bool{true, true}, 0},
		{[]float64{0.9, 0.9}, []bool{true, false}, 0.4},
		{[]float64{0.05, 0.95}, []bool{false, true}, 0.05},
		{[]float64{0.5, -1}, []bool{true, true}, -1},
	}
	for _, c := range cases {
		if got := calibration(c.conf, c.right); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("calibration(%v, %v) = %v, want %v", c.conf, c.right, got, c.want)
		}
	}
}
