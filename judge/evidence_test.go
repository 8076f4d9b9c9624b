package judge

import (
	"strings"
	"testing"

	"github.com/tinehq/tine/evidence"
)

func withEvidence(edit func(*evidence.Fork)) func(*Candidate) {
	return func(c *Candidate) {
		if c.Evidence == nil {
			c.Evidence = &evidence.Fork{}
		}
		edit(c.Evidence)
	}
}

var (
	hardCoded = withEvidence(func(e *evidence.Fork) {
		e.Flags = append(e.Flags, evidence.Flag{Kind: evidence.TestLiterals, Path: "calc.py", Detail: "if n == 5: return 120"})
	})
	weakened = withEvidence(func(e *evidence.Fork) {
		e.TestFiles, e.Validity = []string{"test_calc.py"}, evidence.ProvesNothing
		e.Flags = append(e.Flags, evidence.Flag{Kind: evidence.AssertionsRemoved, Path: "test_calc.py"})
	})
	holdoutFailed  = withEvidence(func(e *evidence.Fork) { e.Holdout = &evidence.Check{Command: "h", Exit: 1} })
	holdoutPassed  = withEvidence(func(e *evidence.Fork) { e.Holdout = &evidence.Check{Command: "h", Passed: true} })
	regressionFail = withEvidence(func(e *evidence.Fork) { e.Regression = &evidence.Check{Command: "r", Exit: 1} })
	checkFailed    = withEvidence(func(e *evidence.Fork) {
		e.Checks = []*evidence.Check{{Command: "go vet ./...", Exit: 1}, {Command: "gofmt -l .", Passed: true}}
	})
	outside = withEvidence(func(e *evidence.Fork) {
		e.Flags = append(e.Flags, evidence.Flag{Kind: evidence.OutsideScope, Path: "util.py"})
	})
)

func TestHeuristic_Evidence(t *testing.T) {
	tests := []struct {
		name             string
		cands            []Candidate
		winner           string
		minConf, maxConf float64
		because          string
	}{
		{"hard-coded loses to a bigger fix", []Candidate{done("a", passed, lines(3), hardCoded), done("b", passed, lines(40))}, "b", 0.6, 1,
			"name-a is penalised (test literals in calc.py"},
		{"weakened test loses", []Candidate{done("a", passed, lines(2), weakened), done("b", passed, lines(30))}, "b", 0.6, 1,
			"tests passed (name-a passed but prove nothing)"},
		{"holdout failure loses", []Candidate{done("a", passed, lines(5), holdoutFailed), done("b", passed, lines(50), holdoutPassed)}, "b", 0.6, 1,
			"holdout failed"},
		{"regression failure loses", []Candidate{done("a", passed, lines(5), regressionFail), done("b", passed, lines(50))}, "b", 0.6, 1,
			"regression failed"},
		{"failing a declared check loses", []Candidate{done("a", passed, lines(5), checkFailed), done("b", passed, lines(50))}, "b", 0.3, 1,
			"check go vet ./... failed"},
		{"outside scope weighs little", []Candidate{done("a", passed, lines(5), outside), done("b", passed, lines(50))}, "b", 0, 0.5,
			"outside scope in util.py"},
		{"lone hard-coded fix does not clear", []Candidate{done("a", passed, hardCoded)}, "a", 0.5, 0.5,
			"its evidence counts against it"},
		{"lone holdout failure", []Candidate{done("a", passed, holdoutFailed)}, "a", 0.25, 0.25, "holdout failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := judgeHeuristic(t, tt.cands...)
			if v.Winner != tt.winner {
				t.Errorf("winner %q; want %q", v.Winner, tt.winner)
			}
			if v.RawConfidence < tt.minConf || v.RawConfidence > tt.maxConf {
				t.Errorf("raw confidence %v; want in [%v, %v]", v.RawConfidence, tt.minConf, tt.maxConf)
			}
			if !strings.Contains(v.Rationale, tt.because) {
				t.Errorf("rationale %q; want it to contain %q", v.Rationale, tt.because)
			}
			t.Logf("%.4f %v: %s", v.Confidence, v.Scores, v.Rationale)
		})
	}
}

// Candidates that only diff size separates: the judge says it cannot tell
// and names what would separate them.
func TestHeuristic_CannotTell(t *testing.T) {
	v := judgeHeuristic(t, done("a", passed, lines(4)), done("b", passed, lines(60)))
	if v.Clears(DefaultThresholdForTest) || !strings.Contains(v.CannotTell, "holdout test") || !strings.Contains(v.CannotTell, "regression command") {
		t.Errorf("confidence %v, cannot tell %q; want below %v naming a holdout test and a regression command", v.Confidence, v.CannotTell, DefaultThresholdForTest)
	}
	if !strings.Contains(v.Rationale, v.CannotTell) {
		t.Errorf("rationale %q lacks %q", v.Rationale, v.CannotTell)
	}
	both := withEvidence(func(e *evidence.Fork) {
		e.Holdout, e.Regression = &evidence.Check{Passed: true}, &evidence.Check{Passed: true}
	})
	v = judgeHeuristic(t, done("a", passed, lines(4), both), done("b", passed, lines(60), both))
	if !strings.Contains(v.CannotTell, "exercises where they differ") {
		t.Errorf("cannot tell %q with holdout and regression run; want a more specific holdout asked for", v.CannotTell)
	}
	// Evidence that separates them: no "cannot tell".
	v = judgeHeuristic(t, done("a", passed, lines(4), hardCoded), done("b", passed, lines(60)))
	if v.CannotTell != "" {
		t.Errorf("cannot tell %q where a red flag separates them", v.CannotTell)
	}
}

// A winner that passes a rival's valid tests, with nothing against it, is
// confident however close the runner-up; without that, it is not.
func TestHeuristic_Corroboration(t *testing.T) {
	corroborated := withEvidence(func(e *evidence.Fork) { e.CrossPassed = []string{"name-b"} })
	ownValid := withEvidence(func(e *evidence.Fork) { e.TestFiles, e.Validity = []string{"x_test.go"}, evidence.Valid })
	v := judgeHeuristic(t, done("a", passed, lines(4), corroborated), done("b", passed, lines(60), ownValid))
	if v.Winner != "a" || !v.Clears(DefaultThresholdForTest) || v.CannotTell != "" || !strings.Contains(v.Rationale, "corroboration") {
		t.Errorf("winner %s confidence %v cannot tell %q: %s; want a, clearing, corroborated", v.Winner, v.Confidence, v.CannotTell, v.Rationale)
	}
	v = judgeHeuristic(t, done("a", passed, lines(4), corroborated, outside), done("b", passed, lines(60), ownValid))
	if v.Clears(DefaultThresholdForTest) {
		t.Errorf("confidence %v with a red flag against the winner; want it not to clear", v.Confidence)
	}
}

// Failing a rival's valid tests counts only when another fork passes them
// too and their author's holdout did not fail: a test only its author
// passes may assert its author's own wrong answer.
func TestHeuristic_TrustedTests(t *testing.T) {
	failsB := withEvidence(func(e *evidence.Fork) { e.CrossFailed = []string{"name-b"} })
	passesB := withEvidence(func(e *evidence.Fork) { e.CrossPassed = []string{"name-b"} })
	cases := []struct {
		name      string
		cands     []Candidate
		penalised bool
	}{
		{"unbacked", []Candidate{done("a", passed, lines(5), failsB), done("b", passed, lines(50))}, false},
		{"backed", []Candidate{done("a", passed, lines(5), failsB), done("b", passed, lines(50)), done("c", passed, lines(60), passesB)}, true},
		{"backed but its author failed the holdout", []Candidate{done("a", passed, lines(5), failsB), done("b", passed, lines(50), holdoutFailed),
			done("c", passed, lines(60), passesB)}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := judgeHeuristic(t, c.cands...)
			if got := v.Scores["a"] < 0.9; got != c.penalised {
				t.Errorf("name-a scores %v (penalised %v), want penalised %v: %s", v.Scores["a"], got, c.penalised, v.Rationale)
			}
		})
	}
}

// DefaultThresholdForTest is fork-run's default confidence threshold.
const DefaultThresholdForTest = 0.8

// A rationale names each reason once: the evidence features a runner-up is
// penalised on are said in "is penalised (...)", not again as a lead of the
// winner's (the demo said "smaller diff among passing forks" twice).
func TestHeuristic_RationaleSaysEachReasonOnce(t *testing.T) {
	v := judgeHeuristic(t, done("a", passed, lines(2)), done("b", passed, lines(64), outside), done("c", failed, lines(7)))
	if v.Winner != "a" {
		t.Fatalf("winner %s: %s", v.Winner, v.Rationale)
	}
	if n := strings.Count(v.Rationale, "smaller diff"); n != 1 {
		t.Errorf("rationale says smaller diff %d times: %s", n, v.Rationale)
	}
	if !strings.Contains(v.Rationale, "name-b is penalised (outside scope in util.py") {
		t.Errorf("rationale does not name the penalty: %s", v.Rationale)
	}
}
