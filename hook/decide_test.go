package hook

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tinehq/tine/classify"
)

const (
	claudePre  = "claude/input/pretooluse-bash.real-desktop-2.1.121.json"
	claudeFail = "claude/input/posttoolusefailure-bash.real-desktop-2.1.121.sortedkeys.json"
)

// decideCase is one payload answered in one environment.
type decideCase struct {
	name    string
	agent   Agent
	payload []byte
	role    classify.Role // "" = outside tine
	deny    []string      // substrings of the deny reason; nil = no deny
	context bool          // additionalContext expected
	records []string
}

// decideCases is every fixture, and real payloads carrying other
// commands, in every environment.
func decideCases(t testing.TB) []decideCase {
	pre := readFixture(t, claudePre)
	codexPre := func(cmd string) []byte {
		return codexPayload(t, "pre-tool-use", map[string]any{
			"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "call_1",
			"tool_input": map[string]any{"command": cmd},
		})
	}
	codexPost := codexPayload(t, "post-tool-use", map[string]any{
		"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "call_1",
		"tool_input": map[string]any{"command": "go test ./..."}, "tool_response": "ok",
	})
	codexPrompt := func(p string) []byte {
		return codexPayload(t, "user-prompt-submit", map[string]any{"hook_event_name": "UserPromptSubmit", "prompt": p})
	}
	claudePrompt := readFixture(t, "claude/docs-examples/userpromptsubmit.input.json")
	upgrade := []string{"tine: `npm update` is a dependency upgrade", "tine fork-self -n 2 --approach 'upgrade in place and fix breakages' --approach 'pin current versions and patch minimally'"}
	push := []string{"`git push origin main` is refused", "external effect"}
	var cs []decideCase
	add := func(name string, agent Agent, payload []byte, role classify.Role, deny []string, ctx bool, records ...string) {
		cs = append(cs, decideCase{name, agent, payload, role, deny, ctx, records})
	}
	for _, role := range []classify.Role{"", classify.Source, classify.Fork} {
		in := func(kinds ...string) []string { return inside(role, kinds) }
		inSource := func(d []string) []string { return only(role == classify.Source, d) }
		inRun := func(d []string) []string { return only(role != "", d) }
		add("claude/pre/echo", Claude, pre, role, nil, false)
		add("claude/pre/echo-2", Claude, readFixture(t, "claude/input/pretooluse-bash-2.real-desktop-2.1.121.json"), role, nil, false)
		add("claude/pre/psql-select", Claude, readFixture(t, "claude/docs-examples/pretooluse-bash.input.json"), role, nil, false)
		add("claude/pre/npm-update", Claude, withCommand(t, pre, "npm update"), role, inSource(upgrade), false, in(deniedIf(role == classify.Source)...)...)
		add("claude/pre/git-push", Claude, withCommand(t, pre, "git push origin main"), role, inRun(push), false, in(RecordDenied)...)
		add("claude/post-failure", Claude, readFixture(t, claudeFail), role, nil, false, in(RecordToolCall)...)
		add("claude/post-write", Claude, readFixture(t, "claude/docs-examples/posttooluse-write.input.json"), role, nil, false, in(RecordToolCall)...)
		add("claude/prompt/plain", Claude, claudePrompt, role, nil, false, in(RecordTurnStarted)...)
		add("claude/prompt/choice", Claude, withPrompt(t, claudePrompt, "merge source-2"), role, nil, role != "", in(RecordTurnStarted, RecordApprovalChoice)...)
		add("claude/prompt/hint", Claude, withPrompt(t, claudePrompt, "upgrade react to 19"), role, nil, false, in(RecordTurnStarted, RecordPromptHints)...)
		add("claude/stop", Claude, readFixture(t, "claude/input/stop.real-desktop-2.1.121.json"), role, nil, false, in(RecordTurnStopped)...)
		add("claude/stop-2", Claude, readFixture(t, "claude/input/stop-2.real-desktop-2.1.121.json"), role, nil, false, in(RecordTurnStopped)...)
		add("claude/stop-docs", Claude, readFixture(t, "claude/docs-examples/stop.input.json"), role, nil, false, in(RecordTurnStopped)...)
		add("claude/subagent-stop", Claude, readFixture(t, "claude/docs-examples/subagentstop.input.json"), role, nil, false)
		add("claude/notification", Claude, readFixture(t, "claude/docs-examples/notification.input.json"), role, nil, false)
		add("codex/pre/ls", Codex, codexPre("ls -la"), role, nil, false)
		add("codex/pre/go-mod-tidy", Codex, codexPre("go mod tidy"), role, inSource([]string{"is a lockfile rewrite", "tine fork-self -n 2"}), false, in(deniedIf(role == classify.Source)...)...)
		add("codex/pre/curl-post", Codex, codexPre("curl -X POST https://api.example.com/x"), role, inRun([]string{"external effect"}), false, in(RecordDenied)...)
		add("codex/post", Codex, codexPost, role, nil, false, in(RecordToolCall)...)
		add("codex/prompt/pick", Codex, codexPrompt("pick fork 2"), role, nil, role != "", in(RecordTurnStarted, RecordApprovalChoice)...)
		for i, p := range codexStops(t) {
			recs := in(RecordTurnStopped)
			if i == 0 || i == 5 { // title generation
				recs = nil
			}
			add("codex/stop-"+string(rune('1'+i)), Codex, p, role, nil, false, recs...)
		}
	}
	return cs
}

func inside(role classify.Role, kinds []string) []string {
	if role == "" {
		return nil
	}
	return kinds
}

func only(ok bool, s []string) []string {
	if !ok {
		return nil
	}
	return s
}

func deniedIf(ok bool) []string { return only(ok, []string{RecordDenied}) }

func withPrompt(t testing.TB, payload []byte, prompt string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil {
		t.Fatal(err)
	}
	m["prompt"] = prompt
	b, _ := json.Marshal(m)
	return b
}

func TestDecide_Fixtures(t *testing.T) {
	for _, tc := range decideCases(t) {
		t.Run(tc.name+"/"+roleName(tc.role), func(t *testing.T) {
			rec := &fakeRecorder{}
			env := Env{Recorder: rec, Role: tc.role}
			if tc.role != "" {
				env.Run = "source"
			}
			ans := Handle(context.Background(), tc.agent, tc.payload, env)
			checkOutput(t, ans, tc)
			if !slices.Equal(rec.kinds(), tc.records) {
				t.Errorf("records %v, want %v", rec.kinds(), tc.records)
			}
		})
	}
}

func roleName(r classify.Role) string {
	if r == "" {
		return "outside"
	}
	return string(r)
}

// checkOutput checks what the process would print.
func checkOutput(t *testing.T, ans Answer, tc decideCase) {
	t.Helper()
	out := ans.Output
	if out.Exit != 0 || out.Stderr != "" {
		t.Errorf("exit %d, stderr %q", out.Exit, out.Stderr)
	}
	if tc.deny == nil && !tc.context {
		if len(out.Stdout) != 0 {
			t.Errorf("stdout %s, want nothing", out.Stdout)
		}
		return
	}
	var got hookOutput
	if err := json.Unmarshal(out.Stdout, &got); err != nil {
		t.Fatalf("stdout %q: %v", out.Stdout, err)
	}
	s := got.Specific
	if s.EventName != ans.Event.Name {
		t.Errorf("hookEventName %q, want %q", s.EventName, ans.Event.Name)
	}
	if tc.context && (s.Context == "" || s.Decision != "") {
		t.Errorf("want context only: %s", out.Stdout)
	}
	if tc.deny != nil && s.Decision != "deny" {
		t.Errorf("want deny: %s", out.Stdout)
	}
	for _, want := range tc.deny {
		if !strings.Contains(s.DecisionReason, want) {
			t.Errorf("reason %q lacks %q", s.DecisionReason, want)
		}
	}
}

func TestDecide_ForkFirstMessage(t *testing.T) {
	ev, err := Parse(Claude, withCommand(t, readFixture(t, claudePre), "npm update"))
	if err != nil {
		t.Fatal(err)
	}
	r := Decide(context.Background(), ev, Env{Run: "source", Role: classify.Source})
	want := "tine: `npm update` is a dependency upgrade (npm update changes dependency versions; try it in forks before touching the source); " +
		"run it in forks first: tine fork-self -n 2 --approach 'upgrade in place and fix breakages' --approach 'pin current versions and patch minimally' — " +
		"tine forks this run once your turn has stopped, so request it, say so, and end the turn."
	if r.Reason != want {
		t.Errorf("reason\n got %s\nwant %s", r.Reason, want)
	}
}

func TestDecide_RecorderFailureWarns(t *testing.T) {
	env := Env{Run: "source", Role: classify.Source, Recorder: &fakeRecorder{Err: errors.New("disk full")}}
	ans := Handle(context.Background(), Claude, readFixture(t, "claude/input/stop.real-desktop-2.1.121.json"), env)
	if ans.Output.Exit != 0 || len(ans.Output.Stdout) != 0 || !strings.Contains(ans.Output.Stderr, "disk full") {
		t.Errorf("got %+v", ans.Output)
	}
}

func TestDecide_RecordsEvidence(t *testing.T) {
	rec := &fakeRecorder{}
	env := Env{Run: "source-2", Role: classify.Fork, Recorder: rec}
	Handle(context.Background(), Claude, withCommand(t, readFixture(t, claudeFail), "go test ./..."), env)
	if len(rec.Records) != 1 {
		t.Fatalf("records %v", rec.Records)
	}
	got := rec.Records[0].Data.(ToolCall)
	if got.OK || !got.Test || *got.ExitCode != 2 || *got.DurationMS != 192 || got.SessionID == "" {
		t.Errorf("evidence %+v", got)
	}
}

func TestHandle_Unreadable(t *testing.T) {
	rec := &fakeRecorder{}
	ans := Handle(context.Background(), Codex, []byte("{oops"), Env{Run: "source", Recorder: rec})
	if ans.Output.Exit != 0 || len(ans.Output.Stdout) != 0 || !strings.Contains(ans.Output.Stderr, "warning") {
		t.Errorf("got %+v", ans.Output)
	}
	if !slices.Equal(rec.kinds(), []string{RecordHookError}) {
		t.Errorf("records %v", rec.kinds())
	}
}

func TestEnvFromOS(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvRun, "")
	t.Setenv(EnvRole, "")
	t.Setenv(EnvEvidence, filepath.Join(dir, "e.jsonl"))
	if e := EnvFromOS(); e.Inside() || e.Recorder != nil {
		t.Errorf("outside: %+v", e)
	}
	t.Setenv(EnvRun, "source-1")
	t.Setenv(EnvRole, "fork")
	if e := EnvFromOS(); !e.Inside() || e.Role != classify.Fork || e.Recorder == nil {
		t.Errorf("fork: %+v", e)
	}
	t.Setenv(EnvRole, "retired")
	if e := EnvFromOS(); e.Role != classify.Source {
		t.Errorf("unknown role %q, want source", e.Role)
	}
}

func TestFileRecorder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "evidence.jsonl")
	r := &FileRecorder{Path: path, Run: "source"}
	for i := range 2 {
		if err := r.Record(context.Background(), RecordTurnStopped, TurnStop{Meta: Meta{Agent: Claude, SessionID: "s"}, StopHookActive: i == 1}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines", len(lines))
	}
	var got struct {
		Run, Kind string
		Data      TurnStop
	}
	if err := json.Unmarshal([]byte(lines[1]), &got); err != nil || got.Run != "source" || got.Kind != RecordTurnStopped || !got.Data.StopHookActive {
		t.Errorf("%s: %+v %v", lines[1], got, err)
	}
}

// TestDecide_CodexNamesTheMCPTools: Codex's sandbox refuses tine's socket,
// so the refusals Codex gets name the tine MCP tool that does the same
// (effect, fork) besides the tine command; Claude's do not.
func TestDecide_CodexNamesTheMCPTools(t *testing.T) {
	codexPre := func(cmd string) []byte {
		return codexPayload(t, "pre-tool-use", map[string]any{
			"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "call_1",
			"tool_input": map[string]any{"command": cmd},
		})
	}
	for _, c := range []struct {
		agent        Agent
		payload      []byte
		command, mcp string
	}{
		{Codex, codexPre("git push origin main"), "tine effect git-push", "MCP server's `effect` tool"},
		{Codex, codexPre("npm update"), "tine fork-self", "MCP server's `fork` tool"},
		{Claude, withCommand(t, readFixture(t, claudePre), "git push origin main"), "tine effect git-push", ""},
	} {
		ev, err := Parse(c.agent, c.payload)
		if err != nil {
			t.Fatal(err)
		}
		r := Decide(context.Background(), ev, Env{Run: "source", Role: classify.Source})
		if r.Action != Deny || !strings.Contains(r.Reason, c.command) || (c.mcp != "") != strings.Contains(r.Reason, "MCP") ||
			!strings.Contains(r.Reason, c.mcp) {
			t.Errorf("%s, %s: %s %q", c.agent, ev.Command, r.Action, r.Reason)
		}
	}
}

// TestDecide_EffectNamesTheSamePush: a plain git push's refusal names the
// tine effect command with the same remote and refspec, ready to run (it
// named `tine effect git-push REMOTE REF`, which an agent had to fill in);
// a push it cannot repeat as it is gets the form with placeholders.
func TestDecide_EffectNamesTheSamePush(t *testing.T) {
	for cmd, want := range map[string]string{
		"git push origin main":                  "`tine effect git-push origin main`",
		"cd sub && git push":                    "`tine effect git-push`",
		"git push upstream HEAD:refs/heads/rel": "`tine effect git-push upstream HEAD:refs/heads/rel`",
		"git push --force origin main":          "`tine effect git-push [REMOTE [REFSPEC]]`",
		"git push origin :old":                  "`tine effect git-push [REMOTE [REFSPEC]]`",
		"git push origin '$(id)'":               "`tine effect git-push [REMOTE [REFSPEC]]`",
	} {
		ev, err := Parse(Claude, withCommand(t, readFixture(t, claudePre), cmd))
		if err != nil {
			t.Fatal(err)
		}
		if r := Decide(context.Background(), ev, Env{Run: "source", Role: classify.Source}); r.Action != Deny || !strings.Contains(r.Reason, want) {
			t.Errorf("%s: %s %q, want it to name %s", cmd, r.Action, r.Reason, want)
		}
	}
}

// TestDecide_AdviceFitsTheEffect: a refused npm publish is told to ask for
// `tine effect run -- npm publish`, not for a git push (before, every
// external change got the git-push advice).
func TestDecide_AdviceFitsTheEffect(t *testing.T) {
	ev, err := Parse(Claude, withCommand(t, readFixture(t, claudePre), "npm publish"))
	if err != nil {
		t.Fatal(err)
	}
	r := Decide(context.Background(), ev, Env{Run: "source", Role: classify.Source})
	if r.Action != Deny || !strings.Contains(r.Reason, "`tine effect run -- npm publish`") || strings.Contains(r.Reason, "git-push") {
		t.Errorf("npm publish: %s %q", r.Action, r.Reason)
	}
}

// TestDecide_HostAdviceWorksOnTheHost: an agent started by a person on the
// host (the run found from its directory) is never told to run what works
// only inside a run (tine fork-self, tine effect, which answer "this
// command works inside a run" there): fork-worthy work is a fork-run the
// person starts, an external change something the person does.
func TestDecide_HostAdviceWorksOnTheHost(t *testing.T) {
	host := func(role classify.Role) Env {
		return Env{Host: func(context.Context, string) (Env, bool) { return Env{Run: "app/source", Role: role}, true }}
	}
	for _, c := range []struct {
		cmd  string
		role classify.Role
		want string
	}{
		{"npm update", classify.Source, "`tine fork-run 'app/source' --prompt TASK -n 2 --approach 'upgrade in place and fix breakages' --approach 'pin current versions and patch minimally'`"},
		{"git push origin main", classify.Source, "Ask the person to run it themselves, from their terminal"},
		{"npm publish", classify.Source, "Ask the person to run it themselves"},
		{"git push origin main", classify.Fork, "ask the person to merge it (`tine merge` from a terminal)"},
	} {
		r := Handle(context.Background(), Claude, withCommand(t, readFixture(t, claudePre), c.cmd), host(c.role)).Response
		if r.Action != Deny || !strings.Contains(r.Reason, c.want) || strings.Contains(r.Reason, "fork-self") || strings.Contains(r.Reason, "tine effect") {
			t.Errorf("%s on the host (%s): %s %q", c.cmd, c.role, r.Action, r.Reason)
		}
	}
}
