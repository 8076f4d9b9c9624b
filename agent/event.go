package agent

import (
	"errors"
	"fmt"
	"math"
)

// EventKind names what an [Event] reports.
type EventKind string

// The neutral events a [Parser] yields.
const (
	// EventText is output meant for a person: assistant text, or a plain
	// line of a command agent.
	EventText EventKind = "text"
	// EventToolCall is a tool the agent started: name, id and, for shell
	// tools, the command line.
	EventToolCall EventKind = "tool_call"
	// EventToolResult is the outcome of a tool call: error flag and, when
	// the agent reports one, the exit code.
	EventToolResult EventKind = "tool_result"
	// EventUsage is token usage: a per-message or per-turn delta, or (Final)
	// the agent's totals for the whole run.
	EventUsage EventKind = "usage"
	// EventCost is cost in USD: a delta, or (Final) the agent's total.
	EventCost EventKind = "cost"
	// EventSession is the agent's conversation id, to resume or fork later.
	EventSession EventKind = "session"
	// EventResult is the agent's own final verdict: IsError and the final text.
	EventResult EventKind = "result"
	// EventPermissionDenied is a tool call the agent was not allowed to
	// make: ToolName, ToolID and in Command what it asked for (a command,
	// a path). Claude reports them in its result line.
	EventPermissionDenied EventKind = "permission_denied"
)

// Event is one neutral fact read from an agent's stream.
type Event struct {
	Kind EventKind
	// Text is the output (EventText) or the final answer or error (EventResult).
	Text string
	// ToolID links a call to its result; ToolName is the tool ("Bash",
	// "Read", "command_execution", "file_change", ...).
	ToolID, ToolName string
	// Command is the shell command of a shell tool call, or a short
	// description of other calls (files changed, MCP tool).
	Command string
	// ExitCode is the tool's exit code when the agent reports one.
	ExitCode *int
	// IsError marks a failed tool result or an unsuccessful final result.
	IsError bool
	// Usage is the token usage of an EventUsage.
	Usage Usage
	// CostUSD is the cost of an EventCost, never NaN or negative.
	CostUSD float64
	// Final marks usage or cost totals that replace the running sums.
	Final bool
	// SessionID is the conversation id of an EventSession.
	SessionID string
}

// Usage counts tokens. InputTokens excludes cached input: Codex's
// input_tokens (which includes cached_input_tokens) is split on the way in.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
	// CacheWrite1hTokens is the part of CacheWriteTokens written to the
	// one-hour cache (Claude), priced differently.
	CacheWrite1hTokens int64 `json:"cache_write_1h_tokens,omitempty"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:        u.InputTokens + v.InputTokens,
		OutputTokens:       u.OutputTokens + v.OutputTokens,
		CacheReadTokens:    u.CacheReadTokens + v.CacheReadTokens,
		CacheWriteTokens:   u.CacheWriteTokens + v.CacheWriteTokens,
		CacheWrite1hTokens: u.CacheWrite1hTokens + v.CacheWrite1hTokens,
	}
}

// Total returns all tokens counted in u.
func (u Usage) Total() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}

// Parser turns an agent's output, one line at a time, into events.
//
// Feed never fails the stream: a line that cannot be parsed yields a
// *[ParseError] (errors.Is [ErrMalformed]) to be recorded as a warning,
// and the next line is parsed as usual. Unknown event types yield nothing.
type Parser interface {
	Feed(line []byte) ([]Event, error)
}

// ErrMalformed is matched by every *[ParseError].
var ErrMalformed = errors.New("malformed agent output line")

// ParseError is a non-fatal warning about one line of an agent stream.
type ParseError struct {
	Line   int    // 1-based line number within the stream
	Prefix string // the start of the line, for the log
	Err    error
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("agent output line %d %q: %v", e.Line, e.Prefix, e.Err)
}

// Unwrap returns the cause.
func (e *ParseError) Unwrap() error { return e.Err }

// Is reports ErrMalformed.
func (e *ParseError) Is(target error) bool { return target == ErrMalformed }

func parseError(n int, line []byte, err error) *ParseError {
	const max = 80
	p := string(line)
	if len(p) > max {
		p = p[:max] + "..."
	}
	return &ParseError{Line: n, Prefix: p, Err: err}
}

// Option configures a parser.
type Option func(*options)

type options struct {
	prices    PriceTable
	pricesSet bool
	model     string
	unknown   func(model string) // called once per model priced by the unknown-model rule
	warned    map[string]bool
}

// WithPrices sets the price table used to estimate cost from token usage.
// Claude parsers default to [AnthropicPrices]; Codex parsers estimate no
// cost (tokens only) unless a table is given. A nil table disables
// estimates.
func WithPrices(t PriceTable) Option {
	return func(o *options) { o.prices, o.pricesSet = t, true }
}

// WithModel names the model for price lookups when the stream does not
// (Codex streams carry no model name).
func WithModel(model string) Option {
	return func(o *options) { o.model = model }
}

// NewParser returns a parser for kind's output format.
func NewParser(kind Kind, opts ...Option) (Parser, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	switch kind {
	case Claude:
		if !o.pricesSet {
			o.prices = AnthropicPrices()
		}
		return &claudeParser{opts: o, msgs: map[string]*claudeMsg{}}, nil
	case Codex:
		if !o.pricesSet {
			o.prices = OpenAIPrices()
		}
		if o.model == "" {
			o.model = CodexDefaultModel
		}
		return &codexParser{opts: o, started: map[string]bool{}}, nil
	case CommandKind:
		return &commandParser{}, nil
	}
	return nil, fmt.Errorf("agent %q: %w", kind, ErrUnknownKind)
}

// SafeCost returns x, or zero when x is NaN, infinite or negative.
func SafeCost(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		return 0
	}
	return x
}
