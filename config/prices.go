package config

import (
	"math"

	"github.com/BurntSushi/toml"
)

// Price is one model's entry of [prices] in tine.toml, in US dollars per
// million tokens:
//
//	[prices.claude-opus-5-5]
//	input = 4
//	output = 20
//	cache_read = 0.4    # optional: else the built-in price's, if any
//	cache_write = 5     # optional
//
// A key names a model or a prefix of model names. It adds to, or
// replaces, tine's built-in prices of that model.
type Price struct {
	Input, Output         float64
	CacheRead, CacheWrite float64
}

// prices reads [prices]: a table of model tables, each with input and
// output. An entry without both is dropped with a warning.
func (d *decoder) prices(v any) map[string]Price {
	t, ok := d.table(v, "prices", "prices")
	if !ok {
		return nil
	}
	out := map[string]Price{}
	for _, model := range sortedKeys(t.m) {
		t.used[model] = true
		m, ok := t.sub(model, t.m[model])
		if !ok {
			continue
		}
		var p Price
		const want = "a number of dollars per million tokens, 0 or more"
		in := m.float("input", 0, math.MaxFloat64, want, &p.Input)
		outSet := m.float("output", 0, math.MaxFloat64, want, &p.Output)
		m.float("cache_read", 0, math.MaxFloat64, want, &p.CacheRead)
		m.float("cache_write", 0, math.MaxFloat64, want, &p.CacheWrite)
		m.rest()
		if !in || !outSet {
			d.warn(d.pos.line("prices", model), "%s: set input and output (price ignored)", toml.Key{"prices", model}.String())
			continue
		}
		out[model] = p
	}
	return out
}
