package agent

import (
	"slices"
	"strings"
	"testing"
)

func TestClaudeArgv_Permissions(t *testing.T) {
	for _, tt := range []struct {
		uid  int
		args []string
		want []string
	}{
		{0, nil, []string{"--permission-mode", "acceptEdits", "--allowedTools", "Bash"}},
		{1000, nil, []string{"--permission-mode", "bypassPermissions"}},
		{0, []string{"--permission-mode", "dontAsk"}, []string{"--permission-mode", "dontAsk"}},
		{1000, []string{"--permission-mode=plan"}, []string{"--permission-mode=plan"}},
		{1000, []string{"--dangerously-skip-permissions"}, []string{"--dangerously-skip-permissions"}},
	} {
		got, err := Command(Config{Kind: Claude, Args: tt.args, Root: tt.uid == 0}, "p", "", "")
		want := slices.Concat([]string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages"}, tt.want, []string{"--", "p"})
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("uid %d args %q: %q, want %q", tt.uid, tt.args, got, want)
		}
	}
}

func TestClaude_PermissionDenials(t *testing.T) {
	p, _ := NewParser(Claude)
	ev := NewEvidence(0, 0)
	line := `{"type":"result","subtype":"success","is_error":false,"result":"could not","session_id":"s",` +
		`"permission_denials":[{"tool_name":"Write","tool_use_id":"toolu_1","tool_input":{"file_path":"/w/a.txt","content":"x"}},` +
		`{"tool_name":"Bash","tool_use_id":"toolu_2","tool_input":{"command":"rm -rf build"}}]}`
	evs, err := p.Feed([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		ev.Add(e)
	}
	ev.Finish(ev.Snapshot().StartedAt, 0)
	s := ev.Snapshot()
	if s.DenialsTotal != 2 || s.Denials[0] != (Denial{Tool: "Write", ID: "toolu_1", Detail: "/w/a.txt"}) || s.Denials[1].Detail != "rm -rf build" {
		t.Fatalf("denials %d %+v", s.DenialsTotal, s.Denials)
	}
	if s.Failure(true) != "" {
		t.Errorf("failure %q, want none: the agent finished", s.Failure(true))
	}
	if got := s.Problem(true); got != "permission denied: Write /w/a.txt, Bash rm -rf build" {
		t.Errorf("problem %q", got)
	}
}

func TestSnapshot_Failure(t *testing.T) {
	one, zero := 1, 0
	for _, tt := range []struct {
		s         Snapshot
		hasResult bool
		want      string
	}{
		{Snapshot{ExitCode: &one, Result: "error", ResultText: "API Error: 400 boom\nmore"}, true, "the agent exited with status 1: API Error: 400 boom"},
		{Snapshot{ExitCode: &zero, Result: "error", ResultText: "overloaded"}, true, "the agent reported an error: overloaded"},
		{Snapshot{ExitCode: &zero}, true, "the agent produced no result line"},
		{Snapshot{ExitCode: &zero}, false, ""},
		{Snapshot{ExitCode: &zero, Result: "success"}, true, ""},
	} {
		if got := tt.s.Failure(tt.hasResult); got != tt.want || !strings.HasPrefix(tt.s.Problem(tt.hasResult), tt.want) {
			t.Errorf("%+v: %q, want %q", tt.s, got, tt.want)
		}
	}
}
