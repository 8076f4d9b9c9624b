package hook

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/tinehq/tine/classify"
)

// schemaProps reads the properties a Codex output schema allows at the
// top and in hookSpecificOutput, and the permissionDecision values.
type outputSchema struct {
	Properties  map[string]json.RawMessage `json:"properties"`
	Definitions map[string]struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Enum       []string                   `json:"enum"`
	} `json:"definitions"`
}

// TestRender_CodexSchemas checks every answer tine gives Codex against
// Codex's output schemas, which allow no unknown field.
func TestRender_CodexSchemas(t *testing.T) {
	env := Env{Run: "source", Role: classify.Source}
	pre := codexPayload(t, "pre-tool-use", map[string]any{
		"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "c",
		"tool_input": map[string]any{"command": "npm update"},
	})
	prompt := codexPayload(t, "user-prompt-submit", map[string]any{"hook_event_name": "UserPromptSubmit", "prompt": "approve a1b2c3d4"})
	for _, tc := range []struct {
		schema, specific string
		payload          []byte
	}{
		{"pre-tool-use", "PreToolUseHookSpecificOutputWire", pre},
		{"user-prompt-submit", "UserPromptSubmitHookSpecificOutputWire", prompt},
	} {
		ans := Handle(context.Background(), Codex, tc.payload, env)
		var s outputSchema
		if err := json.Unmarshal(readFixture(t, "codex/schema/"+tc.schema+".command.output.schema.json"), &s); err != nil {
			t.Fatal(err)
		}
		var got map[string]map[string]string
		if err := json.Unmarshal(ans.Output.Stdout, &got); err != nil {
			t.Fatalf("%s: %q: %v", tc.schema, ans.Output.Stdout, err)
		}
		for k, v := range got {
			if _, ok := s.Properties[k]; !ok {
				t.Errorf("%s: field %s not in the schema", tc.schema, k)
			}
			for k2 := range v {
				if _, ok := s.Definitions[tc.specific].Properties[k2]; !ok {
					t.Errorf("%s: hookSpecificOutput.%s not in the schema", tc.schema, k2)
				}
			}
		}
		if d := got["hookSpecificOutput"]["permissionDecision"]; d != "" && !slices.Contains(s.Definitions["PreToolUsePermissionDecisionWire"].Enum, d) {
			t.Errorf("permissionDecision %q not in the schema", d)
		}
	}
}

// TestRender_ClaudeShape compares a deny with the documented shape and
// the real allow sample's layout.
func TestRender_ClaudeShape(t *testing.T) {
	var sample struct {
		Specific map[string]string `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(readFixture(t, "claude/output/pretooluse-allow-additionalcontext.real.json"), &sample); err != nil {
		t.Fatal(err)
	}
	ev := Event{Agent: Claude, Kind: PreToolUse, Name: "PreToolUse"}
	out := Render(Claude, ev, Response{Action: Deny, Reason: "no"})
	var got struct {
		Specific map[string]string `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal(out.Stdout, &got); err != nil {
		t.Fatal(err)
	}
	for k := range got.Specific {
		if _, ok := sample.Specific[k]; !ok {
			t.Errorf("field %s not in the real sample", k)
		}
	}
	want := `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no"}}` + "\n"
	if string(out.Stdout) != want || out.Exit != 0 {
		t.Errorf("got %s (exit %d), want %s", out.Stdout, out.Exit, want)
	}
}
