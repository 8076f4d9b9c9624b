package judge

import (
	"context"
	"math"
	"reflect"
	"testing"
)

func sum(w Weights) float64 {
	s := 0.0
	for _, x := range w {
		s += x
	}
	return s
}

func TestLearnMovesTowardTheChosenFork(t *testing.T) {
	d := DefaultWeights()
	// The person chose a fork with untested but smaller changes over the
	// recommended one whose tests passed.
	chosen := []float64{1, 0.4, 1, 1, 1, 1}
	rec := []float64{1, 1, 1, 1, 1, 0.2}
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
	f := []float64{1, 1, 1, 0, 0.5, 0.3}
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
