package agent

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Bounds of an [Evidence] made by [NewEvidence].
const (
	DefaultOutputBytes = 64 << 10
	DefaultMaxCalls    = 256
	maxWarnings        = 16
	maxResultText      = 4 << 10
)

// ToolCall is one tool call an agent made, with its outcome once known.
type ToolCall struct {
	ID       string `json:"id,omitempty"`
	Name     string `json:"name"`
	Command  string `json:"command,omitempty"`
	Done     bool   `json:"done"`
	IsError  bool   `json:"is_error,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
}

// Denial is a tool call the agent was not allowed to make.
type Denial struct {
	Tool   string `json:"tool"`
	ID     string `json:"id,omitempty"`
	Detail string `json:"detail,omitempty"` // the command or path asked for
}

// Evidence is what one agent run left behind, accumulated from its
// events. The zero value is not ready: use [NewEvidence]. Its methods are
// safe for concurrent use, so a budget watcher may read [Evidence.Cost]
// while the stream is fed; read the fields through [Evidence.Snapshot].
type Evidence struct {
	mu sync.Mutex
	s  Snapshot
	// out holds the tail of the output, at most max bytes after a trim.
	out      []byte
	max      int
	maxCalls int
}

// Snapshot is a copy of an [Evidence], ready to store as JSON.
type Snapshot struct {
	// Output is the last OutputBytes-bounded part of the text output;
	// OutputTotalBytes counts all of it.
	Output           string `json:"output"`
	OutputTotalBytes int64  `json:"output_total_bytes"`
	OutputTruncated  bool   `json:"output_truncated"`
	// ToolCalls are the most recent calls; ToolCallsTotal counts all.
	ToolCalls      []ToolCall `json:"tool_calls"`
	ToolCallsTotal int        `json:"tool_calls_total"`
	// Commands are the most recent shell commands; CommandsTotal counts all.
	Commands      []string `json:"commands"`
	CommandsTotal int      `json:"commands_total"`
	Tokens        Usage    `json:"tokens"`
	// CostUSD is the running estimate, or the final total when CostFinal:
	// the agent's own (claude's total_cost_usd), or its real usage priced
	// (codex's turn.completed).
	CostUSD   float64 `json:"cost_usd"`
	CostFinal bool    `json:"cost_final"`
	SessionID string  `json:"session_id,omitempty"`
	// Result is "success" or "error" from the agent's own final result,
	// empty when none arrived; ResultText is its text (bounded).
	Result     string `json:"result,omitempty"`
	ResultText string `json:"result_text,omitempty"`
	// Denials are the most recent permission denials; DenialsTotal counts
	// all. An agent that was denied a tool did not do what it was asked.
	Denials      []Denial `json:"permission_denials,omitempty"`
	DenialsTotal int      `json:"permission_denials_total,omitempty"`
	// ExitCode is the agent process's exit status, once it ended.
	ExitCode   *int      `json:"exit_code,omitempty"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	WallMS     int64     `json:"wall_ms"`
	// Warnings are the last parse warnings; WarningsTotal counts all.
	Warnings      []string `json:"warnings,omitempty"`
	WarningsTotal int      `json:"warnings_total"`
}

// NewEvidence returns an empty Evidence keeping the last outputBytes of
// output and the last maxCalls tool calls and commands (defaults when
// zero or negative).
func NewEvidence(outputBytes, maxCalls int) *Evidence {
	if outputBytes <= 0 {
		outputBytes = DefaultOutputBytes
	}
	if maxCalls <= 0 {
		maxCalls = DefaultMaxCalls
	}
	return &Evidence{max: outputBytes, maxCalls: maxCalls}
}

// Add records one event.
func (e *Evidence) Add(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch ev.Kind {
	case EventText:
		e.write(ev.Text + "\n")
	case EventToolCall:
		e.call(ev)
	case EventToolResult:
		e.toolResult(ev)
	case EventUsage:
		e.usage(ev)
	case EventCost:
		e.cost(ev)
	case EventSession:
		e.s.SessionID = ev.SessionID
	case EventResult:
		e.result(ev)
	case EventPermissionDenied:
		e.s.DenialsTotal++
		e.s.Denials = keepLast(append(e.s.Denials, Denial{Tool: ev.ToolName, ID: ev.ToolID, Detail: ev.Command}), e.maxCalls)
	}
}

// write appends to the output tail; the buffer grows to twice the bound
// before the tail is moved to the front.
func (e *Evidence) write(s string) {
	e.s.OutputTotalBytes += int64(len(s))
	e.out = append(e.out, s...)
	if len(e.out) > 2*e.max {
		e.trim()
	}
}

func (e *Evidence) trim() {
	if len(e.out) <= e.max {
		return
	}
	start := len(e.out) - e.max
	for start < len(e.out) && !utf8.RuneStart(e.out[start]) {
		start++
	}
	e.out = append(e.out[:0], e.out[start:]...)
	e.s.OutputTruncated = true
}

func (e *Evidence) call(ev Event) {
	e.s.ToolCallsTotal++
	e.s.ToolCalls = keepLast(append(e.s.ToolCalls,
		ToolCall{ID: ev.ToolID, Name: ev.ToolName, Command: ev.Command}), e.maxCalls)
	if ev.Command != "" && (ev.ToolName == "Bash" || ev.ToolName == "command_execution") {
		e.s.CommandsTotal++
		e.s.Commands = keepLast(append(e.s.Commands, ev.Command), e.maxCalls)
	}
}

func keepLast[T any](s []T, n int) []T {
	if len(s) <= n {
		return s
	}
	return append(s[:0], s[len(s)-n:]...)
}

// toolResult completes the most recent call with the same id.
func (e *Evidence) toolResult(ev Event) {
	for i := len(e.s.ToolCalls) - 1; i >= 0; i-- {
		c := &e.s.ToolCalls[i]
		if c.ID == ev.ToolID {
			c.Done, c.IsError, c.ExitCode = true, ev.IsError, ev.ExitCode
			return
		}
	}
}

func (e *Evidence) usage(ev Event) {
	if ev.Final {
		e.s.Tokens = ev.Usage
		return
	}
	e.s.Tokens = e.s.Tokens.Add(ev.Usage)
}

// cost adds a charge to the running estimate; a final total replaces it,
// and later estimates no longer change it.
func (e *Evidence) cost(ev Event) {
	c := SafeCost(ev.CostUSD)
	switch {
	case ev.Final:
		e.s.CostUSD, e.s.CostFinal = c, true
	case !e.s.CostFinal:
		e.s.CostUSD += c
	}
}

func (e *Evidence) result(ev Event) {
	e.s.Result = "success"
	if ev.IsError {
		e.s.Result = "error"
	}
	e.s.ResultText = ev.Text
	if len(ev.Text) > maxResultText {
		e.s.ResultText = ev.Text[:maxResultText]
	}
}

// Warn records a parse warning (a *ParseError from [Parser.Feed]).
func (e *Evidence) Warn(err error) {
	if err == nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.s.WarningsTotal++
	e.s.Warnings = keepLast(append(e.s.Warnings, err.Error()), maxWarnings)
}

// Start records when the agent process started.
func (e *Evidence) Start(t time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.s.StartedAt = t
}

// Finish records when and how the agent process ended, and the wall time.
func (e *Evidence) Finish(t time.Time, exitCode int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.s.FinishedAt, e.s.ExitCode = t, &exitCode
	if !e.s.StartedAt.IsZero() {
		e.s.WallMS = t.Sub(e.s.StartedAt).Milliseconds()
	}
}

// Cost returns the cost so far and whether it is the agent's final total.
func (e *Evidence) Cost() (usd float64, final bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.s.CostUSD, e.s.CostFinal
}

// Snapshot returns a copy of everything recorded so far.
func (e *Evidence) Snapshot() Snapshot {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.trim()
	s := e.s
	s.Output = string(e.out)
	s.ToolCalls = append([]ToolCall(nil), e.s.ToolCalls...)
	s.Commands = append([]string(nil), e.s.Commands...)
	s.Warnings = append([]string(nil), e.s.Warnings...)
	s.Denials = append([]Denial(nil), e.s.Denials...)
	return s
}

// MarshalJSON encodes the snapshot.
func (e *Evidence) MarshalJSON() ([]byte, error) {
	return json.Marshal(e.Snapshot())
}

// Failure says in a line why the agent's run, as s recorded it, did not
// finish, or "" when it did: a non-zero exit, an error result (API
// errors arrive so), or, when hasResult says that the agent's kind ends
// its output with a result line (see [HasResultLine]), a missing one.
func (s Snapshot) Failure(hasResult bool) string {
	switch {
	case s.ExitCode != nil && *s.ExitCode != 0:
		msg := fmt.Sprintf("the agent exited with status %d", *s.ExitCode)
		if s.Result == "error" && s.ResultText != "" {
			msg += ": " + oneLine(s.ResultText)
		}
		return msg
	case s.Result == "error":
		return "the agent reported an error: " + cmpOr(oneLine(s.ResultText), "(no message)")
	case hasResult && s.Result == "":
		return "the agent produced no result line"
	}
	return ""
}

// Problem is [Snapshot.Failure], else the permission denials: why the
// agent did not do what it was asked, as far as its own account goes
// (whether it changed anything is for the caller to see); "" when
// nothing is wrong.
func (s Snapshot) Problem(hasResult bool) string {
	if f := s.Failure(hasResult); f != "" {
		return f
	}
	if s.DenialsTotal > 0 {
		return "permission denied: " + s.denied()
	}
	return ""
}

// denied lists the denials briefly: "Write /w/a.txt, Bash rm -rf x (3 in all)".
func (s Snapshot) denied() string {
	var parts []string
	for _, d := range s.Denials[:min(len(s.Denials), 3)] {
		parts = append(parts, strings.TrimSpace(d.Tool+" "+d.Detail))
	}
	out := strings.Join(parts, ", ")
	if s.DenialsTotal > len(parts) {
		out += fmt.Sprintf(" (%d in all)", s.DenialsTotal)
	}
	return out
}

// HasResultLine reports whether kind's output ends with a result line
// that says how the run went: claude's result, codex's turn.completed or
// turn.failed.
func HasResultLine(kind Kind) bool { return kind == Claude || kind == Codex }

// oneLine returns the first line of s, at most 300 bytes of it.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if len(s) > 300 {
		cut := 300
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
