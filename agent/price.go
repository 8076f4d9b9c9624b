package agent

import (
	"maps"
	"strings"
)

// Price is what one model charges, in USD per million tokens.
type Price struct {
	InputPerMTok      float64
	OutputPerMTok     float64
	CacheReadPerMTok  float64
	CacheWritePerMTok float64
	// CacheWrite1hPerMTok prices one-hour cache writes; zero means
	// CacheWritePerMTok.
	CacheWrite1hPerMTok float64
}

// Cost returns the price of u, never NaN or negative.
func (p Price) Cost(u Usage) float64 {
	w1h := p.CacheWrite1hPerMTok
	if w1h == 0 {
		w1h = p.CacheWritePerMTok
	}
	w5m := max(u.CacheWriteTokens-u.CacheWrite1hTokens, 0)
	c := float64(u.InputTokens)*p.InputPerMTok +
		float64(u.OutputTokens)*p.OutputPerMTok +
		float64(u.CacheReadTokens)*p.CacheReadPerMTok +
		float64(w5m)*p.CacheWritePerMTok +
		float64(u.CacheWrite1hTokens)*w1h
	return SafeCost(c / 1e6)
}

// PriceTable maps model names, or prefixes of them, to prices.
type PriceTable map[string]Price

// Lookup returns the price of model: an exact key, else the longest key
// that is a prefix of model.
func (t PriceTable) Lookup(model string) (Price, bool) {
	if p, ok := t[model]; ok {
		return p, true
	}
	best, found := "", false
	for k := range t {
		if k != "" && strings.HasPrefix(model, k) && len(k) > len(best) {
			best, found = k, true
		}
	}
	return t[best], found
}

// Max returns the most expensive known rate: for each kind of token, the
// highest price any model of t charges. It is what an unknown model is
// charged for enforcement, so that a budget never under-counts it.
func (t PriceTable) Max() Price {
	var m Price
	for _, p := range t {
		m.InputPerMTok = max(m.InputPerMTok, p.InputPerMTok)
		m.OutputPerMTok = max(m.OutputPerMTok, p.OutputPerMTok)
		m.CacheReadPerMTok = max(m.CacheReadPerMTok, p.CacheReadPerMTok)
		m.CacheWritePerMTok = max(m.CacheWritePerMTok, p.CacheWritePerMTok)
		w1h := p.CacheWrite1hPerMTok
		if w1h == 0 {
			w1h = p.CacheWritePerMTok
		}
		m.CacheWrite1hPerMTok = max(m.CacheWrite1hPerMTok, w1h)
	}
	return m
}

// Price returns the price of model under t and whether model is known. An
// unknown model (or none) gets [PriceTable.Max]: the most expensive known
// rate.
func (t PriceTable) Price(model string) (Price, bool) {
	if model != "" {
		if p, ok := t.Lookup(model); ok {
			return p, true
		}
	}
	return t.Max(), false
}

// With returns a copy of t with the models of over added or replacing
// t's own (an override of [prices] in tine.toml). A price of an override
// left zero is taken from the model it replaces, if any: an override may
// give only input and output.
func (t PriceTable) With(over PriceTable) PriceTable {
	out := maps.Clone(t)
	if out == nil {
		out = PriceTable{}
	}
	for k, p := range over {
		if old, ok := t.Lookup(k); ok {
			if p.CacheReadPerMTok == 0 {
				p.CacheReadPerMTok = old.CacheReadPerMTok
			}
			if p.CacheWritePerMTok == 0 {
				p.CacheWritePerMTok = old.CacheWritePerMTok
			}
			if p.CacheWrite1hPerMTok == 0 {
				p.CacheWrite1hPerMTok = old.CacheWrite1hPerMTok
			}
		}
		out[k] = p
	}
	return out
}

// CodexDefaultModel is the model codex 0.171 uses when none is configured
// (as its requests name it); Codex's stream names no model, so its usage is
// priced under [agent.codex] model, else under this one.
const CodexDefaultModel = "gpt-6.2-sol"

// ClaudeDefaultModel is the model Claude Code 2.1.332 uses when none is
// given.
const ClaudeDefaultModel = "claude-opus-5-5"

// AnthropicPrices returns list prices of the Claude models, keyed by
// model-name prefix. Input and output of each were checked against a
// recorded total_cost_usd or modelUsage.costUSD (see the tests); cache
// prices follow Anthropic's multipliers (reads 0.1×, five-minute writes
// 1.25×, one-hour writes 2× input). A model not listed is charged the most
// expensive rate of the table until the final total replaces the estimate.
func AnthropicPrices() PriceTable {
	return PriceTable{
		"claude-opus-5-5":   {4, 20, 0.40, 5, 8},
		"claude-opus-4-5":   {5, 25, 0.50, 6.25, 10},
		"claude-sonnet-4-5": {3, 15, 0.30, 3.75, 6},
		"claude-haiku-4-5":  {1, 5, 0.10, 1.25, 2},
	}
}

// OpenAIPrices returns OpenAI's list prices of the models Codex runs,
// keyed by model-name prefix. Codex's stream names no model: its usage is
// priced under the configured one ([agent.codex] model), else under
// [CodexDefaultModel]. The price of gpt-6.2-sol is not published in any
// source tine could check: it is taken to be gpt-5.2's ($1.75 / $14);
// override it in [prices] of tine.toml.
func OpenAIPrices() PriceTable {
	return PriceTable{
		"gpt-6.2-sol":       {InputPerMTok: 1.75, OutputPerMTok: 14, CacheReadPerMTok: 0.175},
		"gpt-5.2":           {InputPerMTok: 1.75, OutputPerMTok: 14, CacheReadPerMTok: 0.175},
		"gpt-5":             {InputPerMTok: 1.25, OutputPerMTok: 10, CacheReadPerMTok: 0.125},
		"gpt-5-mini":        {InputPerMTok: 0.25, OutputPerMTok: 2, CacheReadPerMTok: 0.025},
		"gpt-5-nano":        {InputPerMTok: 0.05, OutputPerMTok: 0.40, CacheReadPerMTok: 0.005},
		"gpt-4.1":           {InputPerMTok: 2, OutputPerMTok: 8, CacheReadPerMTok: 0.50},
		"gpt-4.1-mini":      {InputPerMTok: 0.40, OutputPerMTok: 1.60, CacheReadPerMTok: 0.10},
		"o3":                {InputPerMTok: 2, OutputPerMTok: 8, CacheReadPerMTok: 0.50},
		"o4-mini":           {InputPerMTok: 1.10, OutputPerMTok: 4.40, CacheReadPerMTok: 0.275},
		"codex-mini-latest": {InputPerMTok: 1.50, OutputPerMTok: 6, CacheReadPerMTok: 0.375},
	}
}

// DefaultPrices returns the table of kind's models, or nil.
func DefaultPrices(kind Kind) PriceTable {
	switch kind {
	case Claude:
		return AnthropicPrices()
	case Codex:
		return OpenAIPrices()
	}
	return nil
}

// Priced reports whether kind's usage under model gets a live cost
// estimate by default: Claude's streams name their models; Codex's usage is
// priced under the configured model or codex's default one. An unknown
// model is priced too, at the most expensive known rate (see
// [KnownModel]).
func Priced(kind Kind, model string) bool {
	return kind == Claude || kind == Codex
}

// KnownModel reports whether model has a price of its own in t; model ""
// stands for kind's default model.
func KnownModel(kind Kind, t PriceTable, model string) bool {
	if model == "" {
		switch kind {
		case Claude:
			model = ClaudeDefaultModel
		case Codex:
			model = CodexDefaultModel
		}
	}
	_, ok := t.Lookup(model)
	return ok
}

// WithUnknownModel calls f, once per model, when usage is priced under a
// model the price table does not know (at the most expensive known rate).
func WithUnknownModel(f func(model string)) Option {
	return func(o *options) { o.unknown = f }
}

// estimate returns the cost event for u under model. An unknown model is
// priced at the table's most expensive rate, and said once through
// WithUnknownModel's function. A nil table gives no estimate.
func (o *options) estimate(model string, u Usage) []Event {
	if len(o.prices) == 0 || model == claudeSynthetic {
		return nil
	}
	if model == "" {
		model = o.model
	}
	p, ok := o.prices.Price(model)
	if !ok && o.unknown != nil && !o.warned[model] {
		if o.warned == nil {
			o.warned = map[string]bool{}
		}
		o.warned[model] = true
		o.unknown(model)
	}
	return []Event{{Kind: EventCost, CostUSD: p.Cost(u)}}
}
