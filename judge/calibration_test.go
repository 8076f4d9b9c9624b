package judge

import (
	"reflect"
	"testing"
)

func TestFit_PoolsViolatorsAndSmooths(t *testing.T) {
	raw := []float64{0, 0, 0.2, 0.2, 0.5, 0.7, 0.7, 1}
	right := []bool{false, true, true, true, false, true, true, true}
	c, err := Fit("test", raw, right)
	if err != nil {
		t.Fatalf("Fit: %v", err)
	}
	// 0: 1/2 -> 0.5; 0.2: 2/2 -> 0.75; 0.5: 0/1 -> 0.3333 violates, pooled
	// with 0.2 into 2/3 -> 0.6; 0.7: 2/2 -> 0.75; 1: 1/1 -> 0.6667
	// violates, pooled with 0.7 into 3/3 -> 0.8.
	want := []Step{{From: 0, P: 0.5, N: 2, Right: 1}, {From: 0.2, P: 0.6, N: 3, Right: 2}, {From: 0.7, P: 0.8, N: 3, Right: 3}}
	if !reflect.DeepEqual(c.Steps, want) {
		t.Fatalf("steps %+v; want %+v", c.Steps, want)
	}
	for _, tt := range []struct{ raw, want float64 }{{0, 0.5}, {0.1, 0.5}, {0.2, 0.6}, {0.69, 0.6}, {0.7, 0.8}, {1, 0.8}} {
		if got := c.Map(tt.raw); got != tt.want {
			t.Errorf("Map(%v) = %v; want %v (the highest step at or below)", tt.raw, got, tt.want)
		}
	}
}

func TestFit_BadInput(t *testing.T) {
	for name, in := range map[string]struct {
		raw   []float64
		right []bool
	}{"empty": {}, "lengths": {[]float64{0.5}, nil}, "out of range": {[]float64{1.5}, []bool{true}}} {
		if _, err := Fit("x", in.raw, in.right); err == nil {
			t.Errorf("%s: Fit succeeded; want an error", name)
		}
	}
	var none *Calibration
	if none.Map(0.3) != 0.3 || (&Calibration{}).Map(0.3) != 0.3 {
		t.Error("a calibration without steps changed the confidence; want it as it is")
	}
}

// The shipped calibration rises and covers [0, 1], and the heuristic
// applies it: a tie that only diff size breaks stays below fork-run's
// default threshold, a corroborated winner clears it, and a winner's poor
// evidence of its own caps the calibrated value.
func TestHeuristic_Calibrated(t *testing.T) {
	c := HeuristicCalibration()
	if len(c.Steps) < 2 || c.Steps[0].From != 0 || c.Source == "" {
		t.Fatalf("calibration %+v; want at least two steps from 0, with a source", c)
	}
	for i := 1; i < len(c.Steps); i++ {
		if c.Steps[i].P <= c.Steps[i-1].P || c.Steps[i].From <= c.Steps[i-1].From {
			t.Errorf("steps %+v do not rise", c.Steps)
		}
	}
	tie := judgeHeuristic(t, done("a", passed, lines(10)), done("b", passed, lines(12)))
	if tie.RawConfidence != 0 || tie.CannotTell == "" || tie.Confidence != c.Map(0) || tie.Clears(DefaultThresholdForTest) {
		t.Errorf("tie: confidence %v raw %v cannot tell %q; want raw 0, the calibration's %v, not clearing %v",
			tie.Confidence, tie.RawConfidence, tie.CannotTell, c.Map(0), DefaultThresholdForTest)
	}
	lone := judgeHeuristic(t, done("a", failed))
	if lone.Confidence != 0.1 {
		t.Errorf("a lone failing fork: confidence %v; want 0.1, its own evidence", lone.Confidence)
	}
	good := judgeHeuristic(t, done("a", passed), done("b", failed))
	if !good.Clears(DefaultThresholdForTest) || good.Confidence != c.Map(good.RawConfidence) {
		t.Errorf("passing against failing: confidence %v (raw %v); want the calibration's %v, clearing %v",
			good.Confidence, good.RawConfidence, c.Map(good.RawConfidence), DefaultThresholdForTest)
	}
}
