package judge

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"sync"
)

// Calibration maps a judge's raw confidence to the probability that its
// winner is right: a non-decreasing step function fitted (by Fit) on
// verdicts whose correctness is known. A raw confidence takes the value of
// the highest step at or below it, and one below the first step the first
// step's; so a raw confidence between two fitted steps gets the lower one,
// never a value interpolated toward the data above it.
type Calibration struct {
	// Source says what the steps were fitted on.
	Source string `json:"source"`
	Steps  []Step `json:"steps"`
}

// Step is one block of a Calibration: the verdicts whose raw confidence
// is at least From (and below the next step's From), Right of N of which
// named the right winner; P is (Right + 1) / (N + 2), the share right
// with one success and one failure added, so that a block of a few
// verdicts all right does not claim certainty.
type Step struct {
	From  float64 `json:"from"`
	P     float64 `json:"p"`
	N     int     `json:"n"`
	Right int     `json:"right"`
}

// Map returns the calibrated confidence of raw; raw itself when c has no
// steps.
func (c *Calibration) Map(raw float64) float64 {
	if c == nil || len(c.Steps) == 0 {
		return raw
	}
	return c.step(raw).P
}

// step is the step raw falls in.
func (c *Calibration) step(raw float64) Step {
	i := sort.Search(len(c.Steps), func(i int) bool { return c.Steps[i].From > raw })
	return c.Steps[max(i-1, 0)]
}

// Fit fits a Calibration to raw confidences and whether each verdict's
// winner was right (raw and right of the same length): isotonic
// regression by pooling adjacent violators over the verdicts sorted by raw
// confidence (equal confidences always in one block), each block's value
// the smoothed share right (see Step), pooled again until those values
// rise strictly.
func Fit(source string, raw []float64, right []bool) (Calibration, error) {
	if len(raw) != len(right) || len(raw) == 0 {
		return Calibration{}, fmt.Errorf("judge: calibration: %d confidences and %d outcomes", len(raw), len(right))
	}
	idx := make([]int, len(raw))
	for i := range idx {
		if math.IsNaN(raw[i]) || raw[i] < 0 || raw[i] > 1 {
			return Calibration{}, fmt.Errorf("judge: calibration: confidence %v outside [0, 1]", raw[i])
		}
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return raw[idx[a]] < raw[idx[b]] })
	var steps []Step
	for _, i := range idx {
		if len(steps) > 0 && steps[len(steps)-1].From == raw[i] {
			steps[len(steps)-1].add(right[i])
			continue
		}
		s := Step{From: raw[i]}
		s.add(right[i])
		steps = append(steps, s)
	}
	steps = rising(steps)
	return Calibration{Source: source, Steps: steps}, nil
}

// rising pools adjacent steps until their values rise strictly.
func rising(steps []Step) []Step {
	for k := 1; k < len(steps); {
		if steps[k].P <= steps[k-1].P {
			steps = pool(steps, k-1)
			k = max(k-1, 1)
			continue
		}
		k++
	}
	return steps
}

// pool merges step k+1 into step k.
func pool(steps []Step, k int) []Step {
	steps[k].N, steps[k].Right = steps[k].N+steps[k+1].N, steps[k].Right+steps[k+1].Right
	steps[k].P = smoothed(steps[k].Right, steps[k].N)
	return append(steps[:k+1], steps[k+2:]...)
}

func (s *Step) add(right bool) {
	s.N++
	if right {
		s.Right++
	}
	s.P = smoothed(s.Right, s.N)
}

func smoothed(right, n int) float64 { return round4(float64(right+1) / float64(n+2)) }

// heuristicCalibration is the heuristic's calibration, fitted on the
// selection benchmark (bench/selection, selbench -fit).
//
//go:embed calibration.json
var heuristicCalibration []byte

// HeuristicCalibration returns the calibration the heuristic applies to
// its confidence (shared: not to be changed).
var HeuristicCalibration = sync.OnceValue(func() *Calibration {
	var c Calibration
	if err := json.Unmarshal(heuristicCalibration, &c); err != nil {
		panic("judge: calibration.json: " + err.Error())
	}
	return &c
})

// text says what c makes of raw, capped by the winner's own evidence
// abs, for a rationale.
func (c *Calibration) text(raw, abs float64) string {
	if c == nil || len(c.Steps) == 0 {
		return ""
	}
	s := c.step(raw)
	if abs < s.P {
		return fmt.Sprintf(" Confidence %.2f: the winner's own evidence caps it (on %s, %d of %d verdicts with a raw confidence of %.2f named the right winner, all of them with better evidence of their own).",
			abs, c.Source, s.Right, s.N, raw)
	}
	return fmt.Sprintf(" Calibrated confidence %.2f (raw %.2f): on %s, %d of %d verdicts with a raw confidence like this named the right winner.",
		s.P, raw, c.Source, s.Right, s.N)
}
