package judge

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/tinehq/tine/evidence"
)

func sum(w Weights) float64 {
	s := 0.0
	for _, x := range w[:numAdditive] {
		s += x
	}
	return s
}

func TestLearnMovesTowardTheChosenFork(t *testing.T) {
	d := DefaultWeights()
	// The person chose a fork with untested but smaller changes over the
	// recommended one whose tests passed.
	chosen := []float64{1, 0.4, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}
	rec := []float64{1, 1, 1, 1, 1, 0.2, 1, 1, 1, 1, 1, 1}
	w := Learn(d, chosen, rec)
	if w[featSize] <= d[featSize] || w[featTests] >= d[featTests] {
		t.Errorf("Learn = %v from %v: want size up, tests down", w, d)
	}
	if math.Abs(sum(w)-1) > 1e-3 || !w.Valid() {
		t.Errorf("Learn = %v: sum %v, want 1 within bounds", w, sum(w))
	}
	// Bounded: however often, no weight leaves [minWeight, maxWeight].
	for range 200 {
		w = Learn(w, chosen, rec)
	}
	if !w.Valid() || w[featTests] > d[featTests] || w[featSize] > maxWeight+1e-9 {
		t.Errorf("after 200 updates %v: out of bounds", w)
	}
}

func TestLearnLeavesWeightsAloneWithoutDisagreement(t *testing.T) {
	d := DefaultWeights()
	f := []float64{1, 1, 1, 0, 0.5, 0.3, 1, 1, 0.25, 1, 1, 1}
	if w := Learn(d, f, f); w != d {
		t.Errorf("equal features moved the weights: %v", w)
	}
	if w := Learn(d, f[:3], f); w != d {
		t.Errorf("short features moved the weights: %v", w)
	}
}

func TestHeuristicWeights(t *testing.T) {
	cands := []Candidate{
		{Run: "r1", Name: "a", Tested: true, TestsPassed: true, FilesChanged: 1, LinesAdded: 40, MergeClean: true},
		{Run: "r2", Name: "b", Tested: false, FilesChanged: 1, LinesAdded: 2, MergeClean: true},
	}
	base, err := Heuristic{}.Judge(context.Background(), "", cands)
	if err != nil {
		t.Fatal(err)
	}
	d := DefaultWeights()
	same, _ := Heuristic{Weights: &d}.Judge(context.Background(), "", cands)
	if !reflect.DeepEqual(base, same) {
		t.Errorf("default weights changed the verdict:\n%+v\n%+v", base, same)
	}
	if got := base.Features["r2"]; len(got) != len(FeatureNames) || got[featTests] != testValue[testsNotRun] {
		t.Errorf("features of r2 = %v", got)
	}
	w := d
	for range 30 {
		w = Learn(w, base.Features["r2"], base.Features["r1"])
	}
	v, _ := Heuristic{Weights: &w}.Judge(context.Background(), "", cands)
	if v.Scores["r2"]-v.Scores["r1"] <= base.Scores["r2"]-base.Scores["r1"] {
		t.Errorf("learned weights %v did not favour r2: %v, before %v", w, v.Scores, base.Scores)
	}
	bad := Weights{}
	if v, _ := (Heuristic{Weights: &bad}).Judge(context.Background(), "", cands); !reflect.DeepEqual(v, base) {
		t.Errorf("invalid weights were used: %+v", v)
	}
}

// Every kind of evidence the heuristic weighs learns: a person who takes
// the fork whose holdout failed over the one whose red flags the judge
// held against it weakens the holdout and strengthens nothing else of the
// kind; verdicts stored before the evidence was weighed (six features)
// move the additive weights only.
func TestLearnEvidenceStrengths(t *testing.T) {
	d := DefaultWeights()
	chosen := []float64{1, 1, 1, 1, 1, 1, 1, 1, penHoldout, 1, 1, 1}
	rec := []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, penSevere}
	w := Learn(d, chosen, rec)
	if w[featHoldout] >= d[featHoldout] || w[featFlags] <= d[featFlags] || w[featCross] != d[featCross] || !w.Valid() {
		t.Errorf("Learn = %v; want holdout weaker, red flags stronger, the rest as built in", w)
	}
	for range 100 {
		w = Learn(w, chosen, rec)
	}
	if w[featHoldout] != minStrength || w[featFlags] != maxStrength || !w.Valid() {
		t.Errorf("after 100 updates %v; want the strengths at their bounds", w)
	}
	old := Learn(d, []float64{1, 0.4, 1, 1, 1, 1}, []float64{1, 1, 1, 1, 1, 0.2})
	if old[featTests] >= d[featTests] || old[featHoldout] != 1 || !old.Valid() {
		t.Errorf("six features: %v; want the additive weights moved, the strengths built in", old)
	}
	var fromOld Weights
	if err := json.Unmarshal([]byte(`[0.3,0.3,0.12,0.12,0.08,0.08]`), &fromOld); err != nil || fromOld != d {
		t.Errorf("six weights read as %v, %v; want the built-in weights", fromOld, err)
	}
	if err := json.Unmarshal([]byte(`[0.3,0.3]`), &fromOld); err == nil {
		t.Error("two weights were read; want an error")
	}
}

// A learned strength changes the verdict: with the holdout's strength at
// its minimum, a small fix that failed the holdout still loses to a large
// one that passed it, but by less; and every evidence feature is in the
// verdict's features for Learn.
func TestHeuristicEvidenceStrength(t *testing.T) {
	cands := []Candidate{
		done("a", passed, lines(5), withEvidence(func(e *evidence.Fork) { e.Holdout = &evidence.Check{Command: "h", Exit: 1} })),
		done("b", passed, lines(50), withEvidence(func(e *evidence.Fork) { e.Holdout = &evidence.Check{Command: "h", Passed: true} })),
	}
	base, _ := Heuristic{}.Judge(context.Background(), "", cands)
	if got := base.Features["a"]; len(got) != int(numFeatures) || got[featHoldout] != penHoldout || base.Features["b"][featHoldout] != 1 {
		t.Fatalf("features %v; want the holdout's goodness %v for a, 1 for b", base.Features, penHoldout)
	}
	w := DefaultWeights()
	w[featHoldout] = minStrength
	weak, _ := Heuristic{Weights: &w}.Judge(context.Background(), "", cands)
	if weak.Scores["a"] <= base.Scores["a"] || weak.Winner != base.Winner {
		t.Errorf("scores %v with a weak holdout, %v built in; want a higher for a, the same winner", weak.Scores, base.Scores)
	}
}
