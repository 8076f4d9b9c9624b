package hook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Agent names a coding agent whose hooks tine answers.
type Agent string

// The agents.
const (
	// Claude is Claude Code.
	Claude Agent = "claude"
	// Codex is the OpenAI Codex CLI.
	Codex Agent = "codex"
)

// Agents lists the supported agents.
var Agents = []Agent{Claude, Codex}

// ParseAgent returns the agent named s, or an error naming the choices.
func ParseAgent(s string) (Agent, error) {
	for _, a := range Agents {
		if string(a) == s {
			return a, nil
		}
	}
	return "", fmt.Errorf("unknown agent %q (want claude or codex)", s)
}

// Kind is what happened, in words shared by all agents.
type Kind string

// The kinds of event tine knows; any other event has [Other].
const (
	// PreToolUse comes before a tool runs; it may deny the call.
	PreToolUse Kind = "pre_tool_use"
	// PostToolUse comes after a tool succeeded.
	PostToolUse Kind = "post_tool_use"
	// PostToolUseFailure comes instead of PostToolUse when the tool
	// failed (Claude Code).
	PostToolUseFailure Kind = "post_tool_use_failure"
	// UserPromptSubmit comes when the person sends a prompt.
	UserPromptSubmit Kind = "user_prompt_submit"
	// Stop comes when the agent's turn ends.
	Stop Kind = "stop"
	// SubagentStop comes when a subagent's turn ends.
	SubagentStop Kind = "subagent_stop"
	// Other is any event tine does not act on.
	Other Kind = "other"
)

var kindOf = map[string]Kind{
	"PreToolUse":         PreToolUse,
	"PostToolUse":        PostToolUse,
	"PostToolUseFailure": PostToolUseFailure,
	"UserPromptSubmit":   UserPromptSubmit,
	"Stop":               Stop,
	"SubagentStop":       SubagentStop,
}

// Event is one hook event, whatever the agent.
type Event struct {
	// Agent is the agent that sent it.
	Agent Agent `json:"agent"`
	// Kind is the neutral kind; Name is the agent's own hook_event_name.
	Kind Kind   `json:"kind"`
	Name string `json:"name"`
	// SessionID and TurnID (Codex only) identify the conversation and turn.
	SessionID string `json:"session_id,omitempty"`
	TurnID    string `json:"turn_id,omitempty"`
	// Cwd is the agent's working directory.
	Cwd string `json:"cwd,omitempty"`
	// Tool is the tool's name on tool events ("Bash").
	Tool string `json:"tool,omitempty"`
	// Command is tool_input.command for Bash.
	Command string `json:"command,omitempty"`
	// Prompt is the user's prompt on UserPromptSubmit.
	Prompt string `json:"prompt,omitempty"`
	// ToolResponse is the tool's result on PostToolUse, as sent.
	ToolResponse json.RawMessage `json:"tool_response,omitempty"`
	// Error is the failure text on PostToolUseFailure ("Exit code N\n...").
	Error string `json:"error,omitempty"`
	// ExitCode is the command's exit status when the event tells it.
	ExitCode *int `json:"exit_code,omitempty"`
	// DurationMS is how long the tool ran, when the event tells it.
	DurationMS *int64 `json:"duration_ms,omitempty"`
	// StopHookActive is set when the agent continues because a Stop hook
	// blocked it earlier.
	StopHookActive bool `json:"stop_hook_active,omitempty"`
	// Ephemeral marks Codex's side sessions (title generation), which
	// come with a null transcript_path: their Stop is not the turn's.
	Ephemeral bool `json:"ephemeral,omitempty"`
	// Raw is the event exactly as read.
	Raw json.RawMessage `json:"-"`
}

// wire is the snake_case payload both agents send.
type wire struct {
	HookEventName  string          `json:"hook_event_name"`
	SessionID      string          `json:"session_id"`
	TurnID         string          `json:"turn_id"`
	TranscriptPath json.RawMessage `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolResponse   json.RawMessage `json:"tool_response"`
	Prompt         string          `json:"prompt"`
	Error          string          `json:"error"`
	DurationMS     *int64          `json:"duration_ms"`
	StopHookActive bool            `json:"stop_hook_active"`
}

// Parse reads one hook event sent by agent. Unknown fields are ignored
// and unknown events have Kind [Other]; only input that is not a JSON
// object, or has no hook_event_name, is an error.
func Parse(agent Agent, data []byte) (Event, error) {
	var w wire
	if err := json.Unmarshal(data, &w); err != nil {
		return Event{}, fmt.Errorf("reading the %s hook event: %w", agent, err)
	}
	if w.HookEventName == "" {
		return Event{}, fmt.Errorf("reading the %s hook event: no hook_event_name", agent)
	}
	ev := Event{
		Agent: agent, Kind: kindOf[w.HookEventName], Name: w.HookEventName,
		SessionID: w.SessionID, TurnID: w.TurnID, Cwd: w.Cwd,
		Tool: w.ToolName, Prompt: w.Prompt, Error: w.Error,
		DurationMS: w.DurationMS, StopHookActive: w.StopHookActive,
		Raw: json.RawMessage(bytes.Clone(data)),
	}
	if ev.Kind == "" {
		ev.Kind = Other
	}
	ev.Command = commandOf(w.ToolInput)
	ev.ToolResponse = nonNull(w.ToolResponse)
	ev.ExitCode = exitCodeOf(w.Error)
	ev.Ephemeral = agent == Codex && string(w.TranscriptPath) == "null"
	return ev, nil
}

// commandOf returns tool_input.command, if the input has one.
func commandOf(in json.RawMessage) string {
	var v struct {
		Command string `json:"command"`
	}
	if len(in) == 0 || json.Unmarshal(in, &v) != nil {
		return ""
	}
	return v.Command
}

func nonNull(m json.RawMessage) json.RawMessage {
	if len(m) == 0 || string(m) == "null" {
		return nil
	}
	return bytes.Clone(m)
}

// exitCodeOf reads N from Claude's failure text "Exit code N\n...".
func exitCodeOf(errText string) *int {
	rest, ok := strings.CutPrefix(errText, "Exit code ")
	if !ok {
		return nil
	}
	num, _, _ := strings.Cut(rest, "\n")
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil {
		return nil
	}
	return &n
}
