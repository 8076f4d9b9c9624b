package hook

import (
	"context"
	"fmt"

	"github.com/tinehq/tine/classify"
)

// Action is what an answer asks of the agent.
type Action string

// The actions.
const (
	// Pass has no opinion: the agent goes on as if no hook had run, and
	// its own permission rules still apply.
	Pass Action = "pass"
	// Deny refuses a tool call (PreToolUse only) and tells the agent why.
	Deny Action = "deny"
)

// Response is tine's answer to one event, before it is put in an agent's
// format by [Render].
type Response struct {
	Action Action `json:"action"`
	// Reason tells the agent why a call was denied.
	Reason string `json:"reason,omitempty"`
	// Context is extra text for the agent (on UserPromptSubmit).
	Context string `json:"context,omitempty"`
	// Decision is the classifier's answer on PreToolUse.
	Decision *classify.Decision `json:"decision,omitempty"`
	// Choice is the approval choice read from a prompt.
	Choice *Choice `json:"choice,omitempty"`
	// Records are the kinds recorded, in order.
	Records []string `json:"records,omitempty"`
	// Warnings are problems that did not change the answer (a record
	// that could not be written).
	Warnings []string `json:"warnings,omitempty"`
}

// Meta identifies where a record comes from.
type Meta struct {
	Agent     Agent  `json:"agent"`
	SessionID string `json:"session_id,omitempty"`
	TurnID    string `json:"turn_id,omitempty"`
}

func metaOf(ev Event) Meta { return Meta{ev.Agent, ev.SessionID, ev.TurnID} }

// Decide answers ev for a hook running in env. Outside a tine run it
// passes every event and records nothing. It never fails: a record that
// cannot be written becomes a warning.
func Decide(ctx context.Context, ev Event, env Env) Response {
	if !env.Inside() {
		return Response{Action: Pass}
	}
	switch ev.Kind {
	case PreToolUse:
		return preToolUse(ctx, ev, env)
	case PostToolUse, PostToolUseFailure:
		return postToolUse(ctx, ev, env)
	case UserPromptSubmit:
		return promptSubmit(ctx, ev, env)
	case Stop:
		return stop(ctx, ev, env)
	}
	return Response{Action: Pass}
}

// record hands one record to env's recorder, noting it in r.
func (r *Response) record(ctx context.Context, env Env, kind string, data any) {
	if env.Recorder == nil {
		return
	}
	if err := env.Recorder.Record(ctx, kind, data); err != nil {
		r.Warnings = append(r.Warnings, err.Error())
		return
	}
	r.Records = append(r.Records, kind)
}

// Denial is the record of a denied tool call.
type Denial struct {
	Meta
	Command string              `json:"command"`
	Verdict classify.Verdict    `json:"verdict"`
	Reason  string              `json:"reason"`
	Cats    []classify.Category `json:"categories,omitempty"`
}

func preToolUse(ctx context.Context, ev Event, env Env) Response {
	if ev.Tool != "Bash" || ev.Command == "" {
		return Response{Action: Pass}
	}
	d := classify.Command(ev.Command, classify.Context{Role: env.Role, Prompt: env.Prompt})
	r := Response{Action: Pass, Decision: &d}
	switch d.Verdict {
	case classify.ForkFirst:
		r.Action, r.Reason = Deny, forkFirstMessage(ev.Command, d, ev.Agent, env)
	case classify.Deny:
		r.Action, r.Reason = Deny, denyMessage(ev.Command, d, ev.Agent, env)
	default:
		return r
	}
	r.record(ctx, env, RecordDenied, Denial{metaOf(ev), ev.Command, d.Verdict, d.Reason, d.Categories})
	return r
}

// ToolCall is the evidence recorded for a finished tool call.
type ToolCall struct {
	Meta
	Tool    string `json:"tool"`
	Command string `json:"command,omitempty"`
	// OK is false when the agent reported the call failed.
	OK         bool   `json:"ok"`
	ExitCode   *int   `json:"exit_code,omitempty"`
	DurationMS *int64 `json:"duration_ms,omitempty"`
	// Test is set when the command looks like a test run.
	Test bool `json:"test,omitempty"`
}

func postToolUse(ctx context.Context, ev Event, env Env) Response {
	r := Response{Action: Pass}
	r.record(ctx, env, RecordToolCall, ToolCall{
		Meta: metaOf(ev), Tool: ev.Tool, Command: ev.Command,
		OK: ev.Kind == PostToolUse, ExitCode: ev.ExitCode, DurationMS: ev.DurationMS,
		Test: ev.Command != "" && IsTestCommand(ev.Command),
	})
	return r
}

// ChoiceRecord is the record of a person's choice typed as a prompt.
type ChoiceRecord struct {
	Meta
	Choice
	Prompt string `json:"prompt"`
}

// HintsRecord is the record of a prompt's classifier hints.
type HintsRecord struct {
	Meta
	Categories []classify.Category `json:"categories"`
}

func promptSubmit(ctx context.Context, ev Event, env Env) Response {
	r := Response{Action: Pass}
	r.record(ctx, env, RecordTurnStarted, metaOf(ev))
	if c, ok := ParseChoice(ev.Prompt); ok {
		r.Choice = &c
		r.Context = fmt.Sprintf("tine recorded the person's choice %q for approval; tine carries it out, do not run it yourself.", c.String())
		r.record(ctx, env, RecordApprovalChoice, ChoiceRecord{metaOf(ev), c, ev.Prompt})
	}
	if hints := classify.Prompt(ev.Prompt); len(hints) > 0 {
		r.record(ctx, env, RecordPromptHints, HintsRecord{metaOf(ev), hints})
	}
	return r
}

// TurnStop is the stable mark recorded when the agent's turn ends.
type TurnStop struct {
	Meta
	StopHookActive bool `json:"stop_hook_active,omitempty"`
}

func stop(ctx context.Context, ev Event, env Env) Response {
	r := Response{Action: Pass}
	if ev.Ephemeral {
		return r // Codex's title generation, not the turn
	}
	r.record(ctx, env, RecordTurnStopped, TurnStop{metaOf(ev), ev.StopHookActive})
	return r
}
