package hook

import (
	"encoding/json"
	"strings"
)

// Output is what a hook process prints and the status it exits with.
type Output struct {
	Stdout []byte
	Stderr string
	Exit   int
}

// Render puts r in agent's format for the event ev answered.
//
// Both agents read the same answer (FORMATS.md §3 and §4, and Codex's
// generated output schemas):
//
//   - a denied PreToolUse is exit 0 with
//     {"hookSpecificOutput":{"hookEventName":"PreToolUse",
//     "permissionDecision":"deny","permissionDecisionReason":"..."}};
//     the reason goes to the agent. tine prefers this to exit 2 + stderr
//     because exit 2 means "block" on every event, so a misread event
//     could erase a prompt or keep a turn from ending.
//   - context on UserPromptSubmit is
//     {"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"..."}}.
//   - anything else prints nothing and exits 0, so the agent's own
//     permission rules still apply ("allow" would skip them).
//
// Only fields in Codex's schemas are used: Codex treats an unknown field
// as a failed hook. Warnings go to stderr, which neither agent reads as a
// decision when the status is 0.
func Render(agent Agent, ev Event, r Response) Output {
	out := Output{Stderr: warnings(r.Warnings)}
	var body any
	switch {
	case ev.Kind == PreToolUse && r.Action == Deny:
		body = hookOutput{Specific: specific{
			EventName: ev.Name, Decision: "deny", DecisionReason: denyReason(agent, r.Reason),
		}}
	case ev.Kind == UserPromptSubmit && r.Context != "":
		body = hookOutput{Specific: specific{EventName: ev.Name, Context: r.Context}}
	default:
		return out
	}
	b, err := json.Marshal(body)
	if err != nil { // cannot happen: plain strings
		out.Stderr += "tine hook: " + err.Error() + "\n"
		return out
	}
	out.Stdout = append(b, '\n')
	return out
}

// denyReason is reason as agent shows it: Codex writes "Command blocked
// by PreToolUse hook: REASON. Command: CMD", so a reason of its own ending
// in a full stop would read "turn.. Command".
func denyReason(agent Agent, reason string) string {
	if agent == Codex {
		return strings.TrimRight(reason, ". ")
	}
	return reason
}

type hookOutput struct {
	Specific specific `json:"hookSpecificOutput"`
}

type specific struct {
	EventName      string `json:"hookEventName"`
	Decision       string `json:"permissionDecision,omitempty"`
	DecisionReason string `json:"permissionDecisionReason,omitempty"`
	Context        string `json:"additionalContext,omitempty"`
}

func warnings(ws []string) string {
	var b strings.Builder
	for _, w := range ws {
		b.WriteString("tine hook: warning: " + w + "\n")
	}
	return b.String()
}
