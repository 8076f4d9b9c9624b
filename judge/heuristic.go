package judge

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/tinehq/tine/evidence"
)

// Heuristic is a Judge that scores candidates from their evidence alone:
// tests, changes, agent status, merge, error signals and diff size. It is
// deterministic and makes no calls; the package documentation describes the
// scoring. Its verdicts have Judge "heuristic".
type Heuristic struct {
	// Weights, when set, replace the built-in weights of the features
	// (a workspace's weights, learned from people's choices).
	Weights *Weights
}

var _ Judge = Heuristic{}

// feature is one kind of evidence the heuristic weighs.
type feature int

// The first numAdditive are summed into the score, by their weights; the
// others are the evidence beyond the test command, which multiplies the
// score by its penalties, each raised to its feature's weight (its
// strength: 1 built in, learned per workspace like the others).
const (
	featChanges feature = iota
	featTests
	featAgent
	featMerge
	featSignals
	featSize
	featValidity   // the fork's tests prove nothing (pass on the fork point)
	featCross      // it fails a rival's trusted valid tests
	featHoldout    // its holdout command failed
	featRegression // its regression command failed
	featChecks     // its declared checks failed
	featFlags      // red flags of its diff
	numFeatures
	numAdditive = featValidity
)

// weight of each feature: the additive ones sum to 1, the evidence's
// strengths are 1.
var weight = [numFeatures]float64{
	featChanges:  0.30,
	featTests:    0.30,
	featAgent:    0.12,
	featMerge:    0.12,
	featSignals:  0.08,
	featSize:     0.08,
	featValidity: 1, featCross: 1, featHoldout: 1, featRegression: 1, featChecks: 1, featFlags: 1,
}

// decisiveMargin is the lead in score over the runner-up that earns full
// confidence. It equals the weight of the tests: tests that pass against
// tests that fail, all else equal, earn a confidence of 0.9.
const decisiveMargin = 0.30

// testOutcome is what a candidate's test command did.
type testOutcome int

const (
	testsPassed testOutcome = iota
	testsNotRun
	testsFailed
	testsTimedOut
	// testsProveNothing: they passed, but the fork's own changed tests
	// pass on the fork point already (evidence.ProvesNothing).
	testsProveNothing
)

// Per test outcome: its value as evidence, and words for the rationale.
var (
	testValue = [...]float64{testsPassed: 1, testsNotRun: 0.4, testsFailed: 0.1, testsTimedOut: 0.05, testsProveNothing: 0.2}
	testWord  = [...]string{testsPassed: "passed", testsNotRun: "not run", testsFailed: "failed", testsTimedOut: "timed out",
		testsProveNothing: "passed but prove nothing"}
	testGroup = [...]string{testsPassed: "passing", testsNotRun: "untested", testsFailed: "failing", testsTimedOut: "timed-out",
		testsProveNothing: "self-tested"}
)

// agentStatus is how the agent itself ended.
type agentStatus int

const (
	agentOK agentStatus = iota
	agentUnknown
	agentFailed
)

var agentValue = [...]float64{agentOK: 1, agentUnknown: 0.5, agentFailed: 0}

// Factors of a candidate's absolute evidence, besides its test value.
const (
	absNoChanges   = 0.1
	absAgentFailed = 0.6
	absConflicts   = 0.6
)

// assessed is one candidate as the heuristic sees it.
type assessed struct {
	c       *Candidate
	tests   testOutcome
	changed bool
	lines   int
	agent   agentStatus
	signals int
	g       [numFeatures]float64 // goodness of each feature, in [0, 1]
	// factor multiplies the score and the absolute evidence: the product
	// of the penalties of the fork's evidence (see penalties); 1 without.
	factor    float64
	penalties []string // what lowered factor, for the rationale
	score     float64
	abs       float64 // absolute evidence, in [0, 1]
}

// Judge scores cands and picks the best; task is not used.
func (h Heuristic) Judge(_ context.Context, _ string, cands []Candidate) (*Verdict, error) {
	if err := checkCandidates(cands); err != nil {
		return nil, err
	}
	w := weight
	if h.Weights != nil && h.Weights.Valid() {
		w = *h.Weights
	}
	as := assess(cands, w)
	v := &Verdict{Judge: "heuristic", Winner: as[0].c.Run, Scores: make(map[string]float64, len(as)),
		Features: make(map[string][]float64, len(as))}
	for _, a := range as {
		v.Scores[a.c.Run] = a.score
		for _, g := range a.g {
			v.Features[a.c.Run] = append(v.Features[a.c.Run], round4(g))
		}
	}
	sep := separation(as)
	raw := round4(math.Min(sep, as[0].abs))
	v.Rationale = rationale(as, sep)
	if c := round4(math.Min(corroboration(as[0]), as[0].abs)); c > raw {
		raw = c
		v.Rationale += fmt.Sprintf(" Raw confidence rests on corroboration: %s passes the valid tests of %s, with nothing against it.",
			as[0].c.label(), joinAnd(as[0].c.Evidence.CrossPassed))
	}
	v.CannotTell = cannotTell(as, raw)
	if v.CannotTell != "" {
		v.Rationale += " " + v.CannotTell
		raw = 0 // diff size and noise say nothing of which is right
	}
	v.RawConfidence = raw
	cal := HeuristicCalibration()
	v.Confidence = round4(math.Min(cal.Map(raw), as[0].abs))
	v.Rationale += cal.text(raw, as[0].abs)
	return v, nil
}

// assess observes and scores every candidate and returns them best first,
// ties in the candidates' order (a fork-run's: its forks', the order of
// its approaches), weighing the features by weight.
func assess(cands []Candidate, weight Weights) []*assessed {
	tr := trustOf(cands)
	as := make([]*assessed, len(cands))
	for i := range cands {
		as[i] = observe(&cands[i], tr, weight)
	}
	minSignals := as[0].signals
	minLines := map[testOutcome]int{}
	for _, a := range as {
		minSignals = min(minSignals, a.signals)
		if m, ok := minLines[a.tests]; a.changed && (!ok || a.lines < m) {
			minLines[a.tests] = a.lines
		}
	}
	for _, a := range as {
		a.g[featSignals] = float64(minSignals+1) / float64(a.signals+1)
		if a.changed {
			a.g[featSize] = float64(max(minLines[a.tests], 1)) / float64(max(a.lines, 1))
		}
		for f := range numAdditive {
			a.score += weight[f] * a.g[f]
		}
		a.score = round4(a.score * a.factor)
	}
	sort.SliceStable(as, func(i, j int) bool { return as[i].score > as[j].score })
	return as
}

// observe reads the evidence of one candidate that does not depend on the
// others, the evidence's penalties raised to their strengths in weight.
func observe(c *Candidate, tr trust, weight Weights) *assessed {
	a := &assessed{c: c, tests: outcome(c), agent: status(c)}
	a.lines = max(c.LinesAdded, 0) + max(c.LinesDeleted, 0)
	a.changed = c.FilesChanged > 0 || a.lines > 0
	a.signals = errorSignals(c.Output) + errorSignals(c.TestOutput)
	a.g[featChanges] = boolValue(a.changed)
	a.g[featTests] = testValue[a.tests]
	if a.tests == testsProveNothing { // the validity's penalty, at its strength
		a.g[featValidity] = testValue[testsProveNothing]
		a.g[featTests] = math.Pow(testValue[testsProveNothing], weight[featValidity])
	} else {
		a.g[featValidity] = 1
	}
	a.g[featAgent] = agentValue[a.agent]
	a.g[featMerge] = boolValue(c.MergeClean)
	a.abs = a.g[featTests]
	if !a.changed {
		a.abs *= absNoChanges
	}
	if a.agent == agentFailed {
		a.abs *= absAgentFailed
	}
	if !c.MergeClean {
		a.abs *= absConflicts
	}
	var pens [numFeatures]float64
	a.factor, a.penalties, pens = penalties(c.Evidence, tr, weight)
	for f := featCross; f < numFeatures; f++ {
		a.g[f] = pens[f]
	}
	a.abs = round4(a.abs * a.factor)
	return a
}

func outcome(c *Candidate) testOutcome {
	switch {
	case !c.Tested:
		return testsNotRun
	case c.TestTimedOut:
		return testsTimedOut
	case c.TestsPassed && c.Evidence != nil && c.Evidence.Validity == evidence.ProvesNothing:
		return testsProveNothing
	case c.TestsPassed:
		return testsPassed
	}
	return testsFailed
}

// Penalties of a fork's evidence: each multiplies its score and its
// absolute evidence.
const (
	penHoldout    = 0.25 // the holdout command failed
	penRegression = 0.4  // the regression command failed
	penCross      = 0.6  // it fails a rival's valid tests
	penCheck      = 0.6  // per failed declared check, at most maxChecks
	maxChecks     = 2
	penSevere     = 0.5 // per severe red flag, at most maxSevere
	penScope      = 0.9 // it changed code outside the paths the task names
	maxSevere     = 3
)

// trust says whose tests count as evidence about other forks, by
// candidate name (see trustOf).
type trust struct {
	backed      map[string]bool // another fork passes its valid tests
	discredited map[string]bool // its holdout command failed
}

// trustOf finds, among cands, the forks whose tests count against others:
// tests that some other fork passes too (a test only its author passes is
// that agent's claim, perhaps asserting its own wrong answer), written by
// a fork whose holdout did not fail.
func trustOf(cands []Candidate) trust {
	tr := trust{backed: map[string]bool{}, discredited: map[string]bool{}}
	for i := range cands {
		ev := cands[i].Evidence
		if ev == nil {
			continue
		}
		for _, r := range ev.CrossPassed {
			tr.backed[r] = true
		}
		if ev.Holdout.Ran() && !ev.Holdout.Passed {
			tr.discredited[cands[i].label()] = true
		}
	}
	return tr
}

// counts reports whether the tests of fork name count against others.
func (tr trust) counts(name string) bool { return tr.backed[name] && !tr.discredited[name] }

// penalties returns the product of the penalties ev earns, each raised
// to its feature's strength in weight, what they are for, in words, and
// per evidence feature the product of its penalties at strength 1 (its
// goodness: 1 without any); 1 and none for nil. Failing a rival's tests
// counts only when tr trusts them.
func penalties(ev *evidence.Fork, tr trust, weight Weights) (float64, []string, [numFeatures]float64) {
	var g [numFeatures]float64
	for f := featCross; f < numFeatures; f++ {
		g[f] = 1
	}
	if ev == nil {
		return 1, nil, g
	}
	f, why := 1.0, []string(nil)
	pen := func(feat feature, p float64, w string) {
		f, why, g[feat] = f*math.Pow(p, weight[feat]), append(why, w), g[feat]*p
	}
	if ev.Holdout.Ran() && !ev.Holdout.Passed {
		pen(featHoldout, penHoldout, "holdout "+ev.Holdout.Word())
	}
	if ev.Regression.Ran() && !ev.Regression.Passed {
		pen(featRegression, penRegression, "regression "+ev.Regression.Word())
	}
	var failed []string
	for _, r := range ev.CrossFailed {
		if tr.counts(r) {
			failed = append(failed, r)
		}
	}
	if len(failed) > 0 {
		pen(featCross, penCross, "fails the valid tests of "+joinAnd(failed))
	}
	for i, c := range ev.FailedChecks() {
		if i < maxChecks {
			pen(featChecks, penCheck, "check "+c.Command+" "+c.Word())
		}
	}
	severe, scope := 0, false
	for _, fl := range ev.Flags {
		switch {
		case fl.Kind.Severe() && severe < maxSevere:
			severe++
			pen(featFlags, penSevere, fl.String())
		case fl.Kind == evidence.OutsideScope && !scope:
			scope = true
			pen(featFlags, penScope, fl.String())
		}
	}
	for k := range g {
		g[k] = round4(g[k])
	}
	return f, why, g
}

func status(c *Candidate) agentStatus {
	switch {
	case c.AgentExit != nil && *c.AgentExit != 0, c.AgentResult == "error", c.PermissionDenials > 0:
		return agentFailed
	case c.AgentExit != nil, c.AgentResult == "success":
		return agentOK
	}
	return agentUnknown
}

// corroborated is the confidence a winner earns, however close its
// runner-up, when tests a rival wrote, and that fail on the fork point,
// pass on it, its own tests passed, and no evidence counts against it: a
// close runner-up then leaves open which good fork to take, not whether
// the winner is good.
const corroborated = 0.7

// corroboration is corroborated when a's evidence corroborates it, else 0.
func corroboration(a *assessed) float64 {
	if a.c.Evidence == nil || len(a.c.Evidence.CrossPassed) == 0 || a.tests != testsPassed || a.factor != 1 {
		return 0
	}
	return corroborated
}

// separation is how clearly the winner stands apart from the runner-up, in
// [0, 1]; with a single candidate there is nobody to stand apart from and
// the winner's absolute evidence alone decides, so it is 1.
func separation(as []*assessed) float64 {
	if len(as) == 1 {
		return 1
	}
	return math.Min(1, (as[0].score-as[1].score)/decisiveMargin)
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// round4 rounds x to four decimals, so that scores compare and print
// without floating-point noise.
func round4(x float64) float64 {
	return math.Round(x*1e4) / 1e4
}
