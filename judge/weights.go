package judge

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// Weights are the heuristic's weights of its evidence features, in the
// order of FeatureNames: the additive features' weights (summing to 1)
// and the strengths of the evidence beyond the test command (exponents
// of its penalties, 1 built in). The zero value is not valid;
// DefaultWeights are the built-in constants, and a workspace's weights
// move from them only when people choose against the recommendation (see
// Learn).
type Weights [numFeatures]float64

// FeatureNames names the features Weights and Verdict.Features are indexed
// by.
var FeatureNames = [numFeatures]string{
	featChanges: "changes", featTests: "tests", featAgent: "agent",
	featMerge: "merge", featSignals: "signals", featSize: "size",
	featValidity: "validity", featCross: "cross-tests", featHoldout: "holdout",
	featRegression: "regression", featChecks: "checks", featFlags: "red-flags",
}

// DefaultWeights returns the built-in weights.
func DefaultWeights() Weights { return weight }

// Bounds of a learned weight and the step of one update: additive
// weights, and the evidence's strengths.
const (
	minWeight    = 0.02
	maxWeight    = 0.5
	learnRate    = 0.05
	weightsSum   = 1.0
	minStrength  = 0.25
	maxStrength  = 3
	strengthRate = 0.5
)

// Learn returns w moved toward the features of the fork a person chose
// over the recommended one (a perceptron step on their difference): an
// additive weight by learnRate times the difference, clamped to
// [minWeight, maxWeight], the additive weights then renormalized to sum
// to 1; an evidence feature's strength by strengthRate times the
// difference in its goodness (the chosen fork had less of that evidence
// against it: stronger; more: weaker), clamped to [minStrength,
// maxStrength]. Features the two forks share leave their weights alone
// except for the renormalization. Features of verdicts from before the
// evidence was weighed (the additive ones alone) move the additive
// weights only; features of another length, or equal vectors, leave w
// unchanged.
func Learn(w Weights, chosen, recommended []float64) Weights {
	n := len(chosen)
	if n != len(recommended) || (n != int(numFeatures) && n != int(numAdditive)) {
		return w
	}
	moved, sum := false, 0.0
	for f := range feature(n) {
		d := chosen[f] - recommended[f]
		switch {
		case d == 0:
		case f < numAdditive:
			moved, w[f] = true, clamp(w[f]+learnRate*d, minWeight, maxWeight)
		default:
			moved, w[f] = true, round4(clamp(w[f]+strengthRate*d, minStrength, maxStrength))
		}
	}
	if !moved {
		return w
	}
	for f := range numAdditive {
		sum += w[f]
	}
	for f := range numAdditive {
		w[f] = round4(clamp(w[f]*weightsSum/sum, minWeight, maxWeight))
	}
	return w
}

func clamp(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }

// Valid reports whether every weight is within bounds (a file edited by
// hand or damaged is not used).
func (w Weights) Valid() bool {
	for f, x := range w {
		lo, hi := minWeight, maxWeight
		if feature(f) >= numAdditive {
			lo, hi = minStrength, maxStrength
		}
		if math.IsNaN(x) || x < lo-1e-9 || x > hi+1e-9 {
			return false
		}
	}
	return true
}

// UnmarshalJSON reads weights as a JSON array; one of the additive
// weights alone (written before the evidence was weighed) gets the
// built-in strengths.
func (w *Weights) UnmarshalJSON(b []byte) error {
	var xs []float64
	if err := json.Unmarshal(b, &xs); err != nil {
		return err
	}
	if len(xs) != int(numFeatures) && len(xs) != int(numAdditive) {
		return fmt.Errorf("judge: %d weights; want %d (or %d)", len(xs), numFeatures, numAdditive)
	}
	*w = weight
	copy(w[:], xs)
	return nil
}

// String is the weights as name=value pairs.
func (w Weights) String() string {
	parts := make([]string, len(w))
	for f, x := range w {
		parts[f] = fmt.Sprintf("%s=%.2f", FeatureNames[f], x)
	}
	return strings.Join(parts, " ")
}
