package hook

import (
	"path/filepath"
	"testing"
)

func TestParse_ClaudeFixtures(t *testing.T) {
	tests := []struct {
		file    string
		kind    Kind
		tool    string
		command string
		prompt  string
		exit    int // -1: none
	}{
		{"claude/input/pretooluse-bash.real-desktop-2.1.121.json", PreToolUse, "Bash", "echo WORKTREE_PLUGIN_ACK", "", -1},
		{"claude/input/pretooluse-bash-2.real-desktop-2.1.121.json", PreToolUse, "Bash", "echo SESSION_ID_CHECK_A", "", -1},
		{"claude/input/posttoolusefailure-bash.real-desktop-2.1.121.sortedkeys.json", PostToolUseFailure, "Bash", "python3 missing.py", "", 2},
		{"claude/input/stop.real-desktop-2.1.121.json", Stop, "", "", "", -1},
		{"claude/input/stop-2.real-desktop-2.1.121.json", Stop, "", "", "", -1},
		{"claude/docs-examples/pretooluse-bash.input.json", PreToolUse, "Bash", "psql -c 'SELECT * FROM users'", "", -1},
		{"claude/docs-examples/posttooluse-write.input.json", PostToolUse, "Write", "", "", -1},
		{"claude/docs-examples/userpromptsubmit.input.json", UserPromptSubmit, "", "", "Write a function to calculate the factorial of a number", -1},
		{"claude/docs-examples/stop.input.json", Stop, "", "", "", -1},
		{"claude/docs-examples/subagentstop.input.json", SubagentStop, "", "", "", -1},
		{"claude/docs-examples/notification.input.json", Other, "", "", "", -1},
		{"claude/docs-examples/sessionstart.input.json", Other, "", "", "", -1},
		{"claude/docs-examples/sessionend.input.json", Other, "", "", "", -1},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			ev, err := Parse(Claude, readFixture(t, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind != tt.kind || ev.Tool != tt.tool || ev.Command != tt.command || ev.Prompt != tt.prompt {
				t.Errorf("got kind %q tool %q command %q prompt %q", ev.Kind, ev.Tool, ev.Command, ev.Prompt)
			}
			if ev.SessionID == "" || ev.Cwd == "" || len(ev.Raw) == 0 || ev.Ephemeral {
				t.Errorf("common fields: %+v", ev)
			}
			if got := exitOf(ev); got != tt.exit {
				t.Errorf("exit code %d, want %d", got, tt.exit)
			}
		})
	}
}

func exitOf(ev Event) int {
	if ev.ExitCode == nil {
		return -1
	}
	return *ev.ExitCode
}

func TestParse_FailureDetails(t *testing.T) {
	ev, err := Parse(Claude, readFixture(t, "claude/input/posttoolusefailure-bash.real-desktop-2.1.121.sortedkeys.json"))
	if err != nil {
		t.Fatal(err)
	}
	if ev.DurationMS == nil || *ev.DurationMS != 192 {
		t.Errorf("duration %v, want 192", ev.DurationMS)
	}
}

func TestParse_CodexStops(t *testing.T) {
	wantEphemeral := []bool{true, false, false, false, false, true} // title generation: transcript_path null
	stops := codexStops(t)
	if len(stops) != len(wantEphemeral) {
		t.Fatalf("%d stop payloads, want %d", len(stops), len(wantEphemeral))
	}
	for i, p := range stops {
		ev, err := Parse(Codex, p)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind != Stop || ev.TurnID == "" || ev.Ephemeral != wantEphemeral[i] {
			t.Errorf("line %d: %+v", i+1, ev)
		}
		if ev.StopHookActive != (i == 3) {
			t.Errorf("line %d: stop_hook_active %v", i+1, ev.StopHookActive)
		}
	}
}

func TestParse_CodexFromSchemas(t *testing.T) {
	pre := codexPayload(t, "pre-tool-use", map[string]any{
		"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "call_1",
		"tool_input": map[string]any{"command": "go mod tidy"},
	})
	ev, err := Parse(Codex, pre)
	if err != nil || ev.Kind != PreToolUse || ev.Command != "go mod tidy" || ev.Ephemeral {
		t.Errorf("pre: %+v %v", ev, err)
	}
	post := codexPayload(t, "post-tool-use", map[string]any{
		"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "call_1",
		"tool_input": map[string]any{"command": "go test ./..."}, "tool_response": "ok",
	})
	ev, err = Parse(Codex, post)
	if err != nil || ev.Kind != PostToolUse || string(ev.ToolResponse) != `"ok"` {
		t.Errorf("post: %+v %v", ev, err)
	}
}

func TestParse_Bad(t *testing.T) {
	for _, in := range []string{"", "not json", "[]", `{"session_id":"x"}`, `{"hook_event_name":`} {
		if _, err := Parse(Claude, []byte(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}
