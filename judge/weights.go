package judge

import (
	"fmt"
	"math"
	"strings"
)

// Weights are the heuristic's weights of its evidence features, in the
// order of FeatureNames. The zero value is not valid; DefaultWeights are
// the built-in constants, and a workspace's weights move from them only
// when people choose against the recommendation (see Learn).
type Weights [numFeatures]float64

// FeatureNames names the features Weights and Verdict.Features are indexed
// by.
var FeatureNames = [numFeatures]string{
	featChanges: "changes", featTests: "tests", featAgent: "agent",
	featMerge: "merge", featSignals: "signals", featSize: "size",
}

// DefaultWeights returns the built-in weights.
func DefaultWeights() Weights { return weight }

// Bounds of a learned weight and the step of one update.
const (
	minWeight  = 0.02
	maxWeight  = 0.5
	learnRate  = 0.05
	weightsSum = 1.0
)

// Learn returns w moved toward the features of the fork a person chose
// over the recommended one (a perceptron step on their difference),
// each weight clamped to [minWeight, maxWeight] and the whole renormalized
// to sum to 1. Features the two forks share leave their weights alone
// except for the renormalization; features of the wrong length, or equal
// vectors, leave w unchanged.
func Learn(w Weights, chosen, recommended []float64) Weights {
	if len(chosen) != int(numFeatures) || len(recommended) != int(numFeatures) {
		return w
	}
	moved, sum := false, 0.0
	for f := range w {
		d := chosen[f] - recommended[f]
		if d != 0 {
			moved = true
			w[f] = clamp(w[f] + learnRate*d)
		}
		sum += w[f]
	}
	if !moved {
		return w
	}
	for f := range w {
		w[f] = round4(clamp(w[f] * weightsSum / sum))
	}
	return w
}

func clamp(x float64) float64 { return math.Max(minWeight, math.Min(maxWeight, x)) }

// Valid reports whether every weight is within bounds (a file edited by
// hand or damaged is not used).
func (w Weights) Valid() bool {
	for _, x := range w {
		if math.IsNaN(x) || x < minWeight-1e-9 || x > maxWeight+1e-9 {
			return false
		}
	}
	return true
}

// String is the weights as name=value pairs.
func (w Weights) String() string {
	parts := make([]string, len(w))
	for f, x := range w {
		parts[f] = fmt.Sprintf("%s=%.2f", FeatureNames[f], x)
	}
	return strings.Join(parts, " ")
}
