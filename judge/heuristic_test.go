package judge

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/tinehq/tine/evidence"
)

func intp(i int) *int { return &i }

// done returns a candidate whose agent finished cleanly and changed one file
// by 10 lines, merging cleanly, with no tests run; edits adjust it.
func done(run string, edits ...func(*Candidate)) Candidate {
	c := Candidate{
		Run: run, Name: "name-" + run, AgentExit: intp(0), AgentResult: "success",
		FilesChanged: 1, LinesAdded: 8, LinesDeleted: 2, MergeClean: true,
	}
	for _, e := range edits {
		e(&c)
	}
	return c
}

func passed(c *Candidate)   { c.Tested, c.TestsPassed = true, true }
func failed(c *Candidate)   { c.Tested, c.TestsPassed = true, false }
func timedOut(c *Candidate) { c.Tested, c.TestTimedOut = true, true }
func noChange(c *Candidate) { c.FilesChanged, c.LinesAdded, c.LinesDeleted = 0, 0, 0 }
func conflict(c *Candidate) { c.MergeClean = false }

func lines(n int) func(*Candidate) {
	return func(c *Candidate) { c.FilesChanged, c.LinesAdded, c.LinesDeleted = 1+n/100, n, 0 }
}

func output(s string) func(*Candidate) { return func(c *Candidate) { c.Output = s } }

func exit(code int) func(*Candidate) { return func(c *Candidate) { c.AgentExit = intp(code) } }

func judgeHeuristic(t *testing.T, cands ...Candidate) *Verdict {
	t.Helper()
	v, err := Heuristic{}.Judge(context.Background(), "task", cands)
	if err != nil {
		t.Fatalf("Judge: %v", err)
	}
	checkVerdict(t, v, cands)
	return v
}

// checkVerdict asserts what holds for every verdict of every judge.
func checkVerdict(t *testing.T, v *Verdict, cands []Candidate) {
	t.Helper()
	if !unit(v.Confidence) {
		t.Errorf("confidence %v not in [0, 1]", v.Confidence)
	}
	if len(v.Scores) != len(cands) {
		t.Errorf("%d scores for %d candidates: %v", len(v.Scores), len(cands), v.Scores)
	}
	for _, c := range cands {
		if s, ok := v.Scores[c.Run]; !ok || !unit(s) {
			t.Errorf("score of %s = %v, %v; want in [0, 1]", c.Run, s, ok)
		}
	}
	// A vote's winner is the majority's, whatever the mean scores say.
	if v.Judge != "vote" && v.Winner != "" && v.Scores[v.Winner] < maxScore(v.Scores) {
		t.Errorf("winner %s scores %v, below the best %v", v.Winner, v.Scores[v.Winner], maxScore(v.Scores))
	}
}

func maxScore(scores map[string]float64) float64 {
	best := 0.0
	for _, s := range scores {
		best = max(best, s)
	}
	return best
}

func TestHeuristic_Judge(t *testing.T) {
	tests := []struct {
		name    string
		cands   []Candidate
		winner  string
		minConf float64
		maxConf float64
		because string // in the rationale
	}{
		{"tests pass vs fail", []Candidate{done("a", failed), done("b", passed)}, "b", 0.85, 1, "tests passed (name-a failed)"},
		{"tests pass vs time out", []Candidate{done("a", timedOut), done("b", passed)}, "b", 0.9, 1, "tests passed (name-a timed out)"},
		{"tests pass vs two failing", []Candidate{done("a", failed), done("b", passed), done("c", failed)}, "b", 0.85, 1, "tests passed (others failed)"},
		// A tie goes to the first candidate given (a fork-run's approach
		// order), not to the smallest (random) run id.
		{"identical untested", []Candidate{done("b"), done("a")}, "b", 0, 0, "No evidence separates name-b and name-a"},
		{"identical passing", []Candidate{done("b", passed), done("a", passed)}, "b", 0, 0, "name-b is first in approach order"},
		{"identical failing", []Candidate{done("a", failed), done("b", failed), done("c", failed)}, "a", 0, 0, "first in approach order"},
		{"top two tie, third fails", []Candidate{done("c", passed), done("a", failed), done("b", passed)}, "c", 0, 0, "No evidence separates name-c and name-b"},
		{"smaller diff wins among passing", []Candidate{done("a", passed, lines(240)), done("b", passed, lines(12))}, "b", 0, 0,
			"smaller diff among passing forks (12 lines vs 240 for name-a)"},
		{"smaller diff wins among untested", []Candidate{done("a", lines(12)), done("b", lines(240))}, "a", 0, 0, "smaller diff"},
		{"zero change loses, untested", []Candidate{done("a", noChange), done("b")}, "b", 0.35, 0.4, "changed 1 file (name-a changed nothing)"},
		{"zero change loses though its tests pass", []Candidate{done("a", noChange, passed), done("b", failed)}, "b", 0, 0.15, "changed 1 file"},
		{"zero change loses to bigger passing diff", []Candidate{done("a", noChange, passed), done("b", passed, lines(500))}, "b", 0.9, 1, "changed"},
		{"agent non-zero exit loses", []Candidate{done("a", passed, exit(1)), done("b", passed)}, "b", 0.3, 0.5, "agent finished cleanly (name-a exited 1)"},
		{"agent error result loses", []Candidate{done("a", passed, func(c *Candidate) { c.AgentResult = "error" }), done("b", passed)}, "b", 0.3, 0.5,
			"agent finished cleanly (name-a reported an error)"},
		{"unknown agent beats failed agent", []Candidate{done("a", exit(2)), done("b", func(c *Candidate) { c.AgentExit, c.AgentResult = nil, "" })}, "b", 0.1, 0.4, "agent status unknown"},
		{"merge conflict loses", []Candidate{done("a", passed, conflict), done("b", passed)}, "b", 0.3, 0.5, "merges cleanly (name-a has merge conflicts)"},
		{"error signals lose", []Candidate{done("a", output("panic: runtime error: index out of range\n")), done("b", output("all done\n"))}, "b", 0, 0,
			"fewer error signals (0 vs 1 for name-a)"},
		{"no-error lines are not signals", []Candidate{done("a", output("Found 0 errors.\nno errors\n")), done("b", output("all done\n"))}, "a", 0, 0, "first in approach order"},
		{"test output signals count", []Candidate{done("a", failed, func(c *Candidate) { c.TestOutput = "--- FAIL: TestX\nFAIL\n" }), done("b", failed)}, "b", 0, 0, "fewer error signals (0 vs 2"},
		{"passing beats untested, capped by separation", []Candidate{done("a"), done("b", passed)}, "b", 0.55, 0.65, "tests passed (name-a not run)"},
		{"winner untested, capped", []Candidate{done("a", noChange), done("b", exit(3))}, "b", 0.24, 0.24, "Raw confidence is limited to 0.24 because no tests ran and its agent failed"},
		{"single passing", []Candidate{done("a", passed)}, "a", 1, 1, "name-a is the only candidate: tests passed, changed 1 file (+8 -2 lines)"},
		{"single untested", []Candidate{done("a")}, "a", 0.4, 0.4, "Raw confidence is limited to 0.40 because no tests ran"},
		{"single failing", []Candidate{done("a", failed)}, "a", 0, 0.1, "its tests failed"},
		{"single passing without change", []Candidate{done("a", passed, noChange)}, "a", 0.1, 0.1, "it changed nothing"},
		{"single passing, proving nothing", []Candidate{done("a", passed, func(c *Candidate) { c.Evidence = &evidence.Fork{Validity: evidence.ProvesNothing} })},
			"a", 0.2, 0.2, "limited to 0.20 because its tests prove nothing (they pass on the fork point already)."},
		{"single passing with conflicts", []Candidate{done("a", passed, conflict)}, "a", 0.6, 0.6, "does not merge cleanly"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := judgeHeuristic(t, tt.cands...)
			if v.Judge != "heuristic" || v.Winner != tt.winner {
				t.Errorf("judge %q winner %q; want heuristic %q", v.Judge, v.Winner, tt.winner)
			}
			if v.RawConfidence < tt.minConf || v.RawConfidence > tt.maxConf {
				t.Errorf("raw confidence %v; want in [%v, %v]", v.RawConfidence, tt.minConf, tt.maxConf)
			}
			if cal := HeuristicCalibration().Map(v.RawConfidence); v.Confidence < 0 || v.Confidence > cal {
				t.Errorf("confidence %v; want in [0, %v], the calibration of the raw %v", v.Confidence, cal, v.RawConfidence)
			}
			if !strings.Contains(v.Rationale, tt.because) {
				t.Errorf("rationale %q; want it to contain %q", v.Rationale, tt.because)
			}
			t.Logf("%.4f (raw %.4f) %v: %s", v.Confidence, v.RawConfidence, v.Scores, v.Rationale)
		})
	}
}

func TestHeuristic_IdenticalUntestedDoNotClear(t *testing.T) {
	v := judgeHeuristic(t, done("x"), done("y"))
	if v.Clears(0.5) || v.RawConfidence != 0 || v.Confidence > 0.4 {
		t.Errorf("confidence %v (raw %v) clears 0.5: %v; want raw 0, at most 0.4 (untested)", v.Confidence, v.RawConfidence, v.Clears(0.5))
	}
}

// A feature equal across all candidates must not change the confidence.
func TestHeuristic_SharedEvidenceAddsNothing(t *testing.T) {
	base := judgeHeuristic(t, done("a", passed), done("b", failed)).Confidence
	shared := map[string]func(*Candidate){
		"error signals": output("error: one\nerror: two\nTraceback (most recent call last):\n"),
		"unknown agent": func(c *Candidate) { c.AgentExit, c.AgentResult = nil, "" },
		"big diff":      lines(5000),
		"cost":          func(c *Candidate) { c.CostUSD = 3 },
	}
	for name, edit := range shared {
		t.Run(name, func(t *testing.T) {
			got := judgeHeuristic(t, done("a", passed, edit), done("b", failed, edit)).Confidence
			if got != base {
				t.Errorf("confidence %v with shared %s; want %v as without", got, name, base)
			}
		})
	}
}

// TestHeuristic_Deterministic: the same candidates in the same order get
// the same verdict, and a tie goes to the first of the tied in that order
// (a fork-run's approach order), whatever their run ids.
func TestHeuristic_Deterministic(t *testing.T) {
	cands := []Candidate{
		done("r3", passed, lines(40)), done("r1", passed, lines(40)), done("r2", failed),
		done("r5", noChange), done("r4", passed, lines(40)),
	}
	tied := map[string]bool{"r1": true, "r3": true, "r4": true}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		rng.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
		first := ""
		for _, c := range cands {
			if tied[c.Run] && first == "" {
				first = c.Run
			}
		}
		want := judgeHeuristic(t, cands...)
		if want.Winner != first || want.RawConfidence != 0 {
			t.Fatalf("order %v: winner %s raw confidence %v; want %s (first of the tied) and 0", runsOf(cands), want.Winner, want.RawConfidence, first)
		}
		if got := judgeHeuristic(t, cands...); !reflect.DeepEqual(got, want) {
			t.Fatalf("order %v gave %+v, then %+v", runsOf(cands), want, got)
		}
	}
}

func runsOf(cands []Candidate) []string {
	var runs []string
	for _, c := range cands {
		runs = append(runs, c.Run)
	}
	return runs
}

func TestHeuristic_BadCandidates(t *testing.T) {
	tests := []struct {
		name  string
		cands []Candidate
	}{
		{"none", nil},
		{"no run id", []Candidate{done("")}},
		{"repeated run id", []Candidate{done("a"), done("a", passed)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Heuristic{}.Judge(context.Background(), "task", tt.cands)
			if err == nil {
				t.Fatalf("verdict %+v; want an error", v)
			}
			if tt.cands == nil && !errors.Is(err, ErrNoCandidates) {
				t.Errorf("error %v; want ErrNoCandidates", err)
			}
		})
	}
}

func TestVerdict_Clears(t *testing.T) {
	tests := []struct {
		v         *Verdict
		threshold float64
		want      bool
	}{
		{&Verdict{Winner: "a", Confidence: 0.5}, 0.5, true},
		{&Verdict{Winner: "a", Confidence: 0.49}, 0.5, false},
		{&Verdict{Winner: "", Confidence: 1}, 0.5, false},
		{&Verdict{Winner: "a", Confidence: 0}, 0, true},
		{nil, 0, false},
	}
	for _, tt := range tests {
		if got := tt.v.Clears(tt.threshold); got != tt.want {
			t.Errorf("%+v.Clears(%v) = %v; want %v", tt.v, tt.threshold, got, tt.want)
		}
	}
}

func BenchmarkHeuristic(b *testing.B) {
	out := benchOutput()
	cands := []Candidate{done("a", passed, output(out)), done("b", failed, output(out)), done("c", output(out))}
	for b.Loop() {
		if _, err := (Heuristic{}).Judge(context.Background(), "", cands); err != nil {
			b.Fatal(err)
		}
	}
}
