package budget

import (
	"fmt"
	"math"
)

// nanosPerUSD is the pool's unit: amounts are whole nanodollars.
const nanosPerUSD = 1e9

// maxNanos bounds a single amount so that sums saturate instead of
// wrapping; it is about 4.6 billion dollars.
const maxNanos = int64(1) << 62

// toNanos converts dollars to nanodollars, counting NaN, ±Inf and negative
// amounts as zero and clamping huge ones to maxNanos.
func toNanos(usd float64) int64 {
	if math.IsNaN(usd) || math.IsInf(usd, 0) || usd <= 0 {
		return 0
	}
	if usd >= float64(maxNanos)/nanosPerUSD {
		return maxNanos
	}
	return int64(math.Round(usd * nanosPerUSD))
}

// fromNanos converts nanodollars back to dollars.
func fromNanos(n int64) float64 { return float64(n) / nanosPerUSD }

// satAdd adds two non-negative amounts, saturating at math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// over reports whether amount is above limit; a limit of 0 means no cap.
func over(amount, limit int64) bool { return limit > 0 && amount > limit }

// dollars formats nanodollars for error messages.
func dollars(n int64) string { return fmt.Sprintf("$%.6f", fromNanos(n)) }
