package cgroup

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// byteUnits maps a lower-cased size suffix to its multiplier. Every unit is
// a power of 1024, as in Docker's --memory: "2G" and "2GiB" are the same.
var byteUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30,
	"t": 1 << 40, "tb": 1 << 40, "tib": 1 << 40,
}

// ParseBytes parses a size such as "1048576", "512M", "2G" or "1.5GiB"
// into bytes. Units are K, M, G and T, in any case, optionally followed by
// "i" and "B"; all are powers of 1024. A fraction is rounded down to a
// whole byte. Negative sizes and sizes beyond int64 are refused.
func ParseBytes(s string) (int64, error) {
	num, unit := splitSize(strings.TrimSpace(s))
	mult, ok := byteUnits[strings.ToLower(unit)]
	if num == "" || !ok {
		return 0, fmt.Errorf("cgroup: invalid size %q", s)
	}
	if !strings.Contains(num, ".") {
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n > math.MaxInt64/mult {
			return 0, fmt.Errorf("cgroup: size %q out of range", s)
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	v := f * float64(mult)
	if err != nil || v >= math.MaxInt64 {
		return 0, fmt.Errorf("cgroup: invalid size %q", s)
	}
	return int64(v), nil
}

// splitSize splits "1.5 GiB" into its number ("1.5") and unit ("GiB").
func splitSize(s string) (num, unit string) {
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimSpace(s[i:])
}
