//go:build linux

package main

// fork-run with the real Claude Code CLI (claude -p --output-format
// stream-json), pointed at a mock Anthropic Messages API on loopback
// (internal/agentmock): the mock model writes answer.txt with the Write
// tool, then answers. The tests skip when claude is not on PATH; CI
// installs it (.ci/run).

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/internal/agentmock"
	"github.com/tinehq/tine/internal/testkit"
)

// requireClaude skips without the real claude CLI.
func requireClaude(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("claude"); err != nil {
		t.Skip("requires the real claude CLI on PATH (npm install -g @anthropic-ai/claude-code@2.1.332, as .ci/run does)")
	}
}

// writeAnswer is a turn that writes answer.txt in the agent's working
// directory with the Write tool (its input schema as Claude Code 2.1
// offers it: file_path, absolute, and content).
func writeAnswer(content string) agentmock.Turn {
	return agentmock.Turn{Tool: &agentmock.ToolUse{Name: "Write",
		Input: map[string]any{"file_path": "{cwd}/answer.txt", "content": content}}}
}

// claudeWorkspace makes a workspace for the real claude: a README, and a
// tine.toml whose [agent.claude] has settings (lines of that table) and
// an env that gives the agents a HOME of their own (a run's processes get
// their owner's HOME otherwise). It returns the env, the workspace and
// the variables that point claude at mock, with tine's own HOME another
// directory; the agents' HOME is claudeHome(c).
func claudeWorkspace(t *testing.T, mock *agentmock.Anthropic, settings string) (*env, string, call) {
	t.Helper()
	testkit.RequireRoot(t, rootWhy)
	requireClaude(t)
	e := newEnv(t)
	dir := e.workspaceDir("cl")
	tmp := canonicalPath(t, t.TempDir())
	home, tineHome := filepath.Join(tmp, "home"), filepath.Join(tmp, "tine-home")
	for _, d := range []string{home, tineHome} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	toml := "[fork]\nagent = \"claude\"\n[agent.claude]\n" + settings + "env = { HOME = \"" + home + "\" }\n"
	files := map[string]string{"README": "a workspace\n", "tine.toml": toml}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.ok("init", dir)
	return e, dir, call{vars: append(mock.Env(home), "HOME="+tineHome)}
}

// claudeHome is the agents' HOME of a claudeWorkspace call: where claude
// keeps its sessions.
func claudeHome(c call) string { return strings.TrimPrefix(c.vars[len(c.vars)-2], "HOME=") }

func newMock(t *testing.T, script func(agentmock.Request) (agentmock.Turn, bool)) *agentmock.Anthropic {
	t.Helper()
	m := agentmock.NewAnthropicFunc(script)
	t.Cleanup(m.Close)
	return m
}

// answerMock is a mock Anthropic API whose model writes "42" to
// answer.txt in its first turn and says so in its second.
func answerMock(t *testing.T) *agentmock.Anthropic {
	t.Helper()
	return newMock(t, func(r agentmock.Request) (agentmock.Turn, bool) {
		switch r.Turn {
		case 0:
			return writeAnswer("42\n"), true
		case 1:
			return agentmock.Turn{Text: "I wrote answer.txt."}, true
		}
		return agentmock.Turn{}, false
	})
}

// TestClaude_DefaultsEditJudgeAndMerge: with tine's default permissions
// the real claude writes its file in each fork (as root, where Claude
// refuses bypassPermissions), both forks are ready, the judge prefers
// the smaller change and auto mode merges it into the source.
func TestClaude_DefaultsEditJudgeAndMerge(t *testing.T) {
	mock := newMock(t, func(r agentmock.Request) (agentmock.Turn, bool) {
		switch r.Turn {
		case 0:
			if strings.Contains(r.Prompt, "Approach for this attempt: short") {
				return writeAnswer("42\n"), true
			}
			return writeAnswer(strings.Repeat("forty-two\n", 12)), true
		case 1:
			return agentmock.Turn{Text: "I wrote answer.txt."}, true
		}
		return agentmock.Turn{}, false
	})
	e, dir, c := claudeWorkspace(t, mock, "")
	rep, r := e.forkRunWith(c, "source", "--prompt", "write the answer to answer.txt", "-n", "2",
		"--approach", "short", "--approach", "long", "--test", "test -s answer.txt",
		"--merge-mode", "auto", "--confidence", "0.2")
	if r.code != 0 {
		t.Fatalf("%v\nreport: %+v", r, rep)
	}
	for _, f := range rep.Forks {
		if f.State != forkrun.Finished || !f.Ready || f.FilesChanged != 1 {
			t.Errorf("%s: state %s (%s) ready %v (%s) files %d; agent %+v\nstderr %s", f.Name, f.State, f.Reason,
				f.Ready, f.NotReady, f.FilesChanged, f.Agent, f.AgentStderr)
		}
		if f.Agent.Result != "success" || f.Agent.DenialsTotal != 0 || f.Agent.ToolCallsTotal != 1 {
			t.Errorf("%s: result %q denials %d tool calls %d", f.Name, f.Agent.Result, f.Agent.DenialsTotal, f.Agent.ToolCallsTotal)
		}
	}
	if rep.Outcome != forkrun.OutcomeMerged || rep.Winner != "source-1" {
		t.Fatalf("outcome %s winner %q (%s); verdict %+v", rep.Outcome, rep.Winner, rep.OutcomeDetail, rep.Verdict)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "answer.txt")); err != nil || string(b) != "42\n" {
		t.Errorf("source answer.txt = %q, %v: want the winner's", b, err)
	}
	// Every conversation request offered Write, and the tool result of
	// each Write was a success.
	for _, req := range mock.Conversation() {
		for _, tr := range req.ToolResults {
			if tr.IsError {
				t.Errorf("a tool call failed: %+v", tr)
			}
		}
	}
}

// TestClaude_DeniedIsNotReady: with a restrictive permission mode from
// [agent.claude], the agent's Write is denied; the fork records the
// denial, is not ready, and the fork-run exits 1 (no fork did real work).
func TestClaude_DeniedIsNotReady(t *testing.T) {
	mock := newMock(t, func(r agentmock.Request) (agentmock.Turn, bool) {
		if r.Turn == 0 {
			return writeAnswer("42\n"), true
		}
		return agentmock.Turn{Text: "I could not write it."}, r.Turn == 1
	})
	e, dir, c := claudeWorkspace(t, mock, "permission_mode = \"dontAsk\"\n")
	rep, r := e.forkRunWith(c, "source", "--prompt", "write the answer", "-n", "1", "--merge-mode", "auto")
	if r.code != exitError {
		t.Errorf("exit %d, want %d: %v", r.code, exitError, r)
	}
	f := rep.Forks[0]
	if f.Ready || !strings.Contains(f.NotReady, "permission denied: Write") || !strings.Contains(f.NotReady, "answer.txt") {
		t.Errorf("ready %v (%q), want not ready for the denied Write", f.Ready, f.NotReady)
	}
	if f.Agent.DenialsTotal != 1 || len(f.Agent.Denials) != 1 || f.Agent.Denials[0].Tool != "Write" {
		t.Errorf("denials %d %+v", f.Agent.DenialsTotal, f.Agent.Denials)
	}
	if rep.Outcome != forkrun.OutcomeNoWinner || !strings.Contains(rep.OutcomeDetail, "permission denied") {
		t.Errorf("outcome %s (%s)", rep.Outcome, rep.OutcomeDetail)
	}
	if fileExists(filepath.Join(dir, "answer.txt")) {
		t.Error("answer.txt reached the source")
	}
	var s forkrun.RunSummary
	e.okJSON(&s, "summary", "source-1", "--json")
	if s.Ready || !strings.Contains(s.NotReady, "permission denied") {
		t.Errorf("summary: ready %v (%q)", s.Ready, s.NotReady)
	}
}

// TestClaude_NoChangesIsNotReady: an agent that only talks changes
// nothing; its fork is not ready ("no changes") and the fork-run exits 1.
func TestClaude_NoChangesIsNotReady(t *testing.T) {
	mock := newMock(t, func(r agentmock.Request) (agentmock.Turn, bool) {
		return agentmock.Turn{Text: "Everything is fine as it is."}, r.Turn == 0
	})
	e, _, c := claudeWorkspace(t, mock, "")
	rep, r := e.forkRunWith(c, "source", "--prompt", "improve it", "-n", "2")
	if r.code != exitError {
		t.Errorf("exit %d, want %d: %v", r.code, exitError, r)
	}
	for _, f := range rep.Forks {
		if f.State != forkrun.Finished || f.Ready || !strings.HasPrefix(f.NotReady, "no changes") || f.Agent.Result != "success" {
			t.Errorf("%s: state %s (%s) ready %v (%q) result %q", f.Name, f.State, f.Reason, f.Ready, f.NotReady, f.Agent.Result)
		}
	}
	if rep.Outcome != forkrun.OutcomeNoWinner || rep.Verdict != nil || !strings.Contains(rep.OutcomeDetail, "no changes") {
		t.Errorf("outcome %s (%s) verdict %+v", rep.Outcome, rep.OutcomeDetail, rep.Verdict)
	}
}

// TestClaude_APIErrorIsNotReady: the API answers an error; claude ends
// with an error result, the fork failed with a reason that names the
// error, and the fork-run exits 1.
func TestClaude_APIErrorIsNotReady(t *testing.T) {
	const msg = "mock: model tine-test is unavailable"
	mock := newMock(t, func(r agentmock.Request) (agentmock.Turn, bool) {
		return agentmock.Turn{Error: &agentmock.APIError{Status: 400, Type: "invalid_request_error", Message: msg}}, true
	})
	e, _, c := claudeWorkspace(t, mock, "")
	rep, r := e.forkRunWith(c, "source", "--prompt", "write the answer", "-n", "1")
	if r.code != exitError {
		t.Errorf("exit %d, want %d: %v", r.code, exitError, r)
	}
	f := rep.Forks[0]
	if f.State != forkrun.Failed || f.Ready || !strings.Contains(f.Reason, msg) || !strings.Contains(f.NotReady, msg) {
		t.Errorf("state %s (%q) ready %v (%q) result %q %q", f.State, f.Reason, f.Ready, f.NotReady, f.Agent.Result, f.Agent.ResultText)
	}
	if f.Agent.Result != "error" {
		t.Errorf("result %q, want error", f.Agent.Result)
	}
	if rep.Outcome != forkrun.OutcomeNoWinner {
		t.Errorf("outcome %s (%s)", rep.Outcome, rep.OutcomeDetail)
	}
}

// claudeOnHost runs the real claude once in dir on the host (a person's
// session), with the mock's environment, and returns its session id and
// cost.
func claudeOnHost(t *testing.T, c call, dir, prompt string) (string, float64) {
	t.Helper()
	cmd := exec.Command("claude", "-p", "--output-format", "json", prompt)
	cmd.Dir, cmd.Env = dir, append(testEnviron(), append(c.vars, "HOME="+claudeHome(c))...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("claude on the host: %v\n%s", err, out)
	}
	var res struct {
		SessionID string  `json:"session_id"`
		Cost      float64 `json:"total_cost_usd"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.SessionID == "" {
		t.Fatalf("claude's result %s: %v", out, err)
	}
	return res.SessionID, res.Cost
}

// sessionScript is the mock model of the conversation tests: a session
// on the host is told to remember a word; a fork's turn writes
// answer.txt, then answers.
func sessionScript(r agentmock.Request) (agentmock.Turn, bool) {
	switch {
	case !strings.Contains(string(r.Body), "write the answer"):
		return agentmock.Turn{Text: "remembered"}, true
	case len(r.ToolResults) > 0:
		return agentmock.Turn{Text: "I wrote answer.txt."}, true
	}
	return writeAnswer("42\n"), true
}

// TestClaude_ConversationForkWithoutDaemon: a person's claude session
// started in a subdirectory of the workspace, under the agents' HOME
// (another than tine's own), with no daemon running: fork-run finds it in Claude Code's store and
// every fork continues it in a session of its own, S's transcript left
// byte-identical and each fork charged its own turn only; a second
// fork-run picks S again (not a fork's session); --fresh starts without
// it; a --session that does not exist fails before anything is forked.
func TestClaude_ConversationForkWithoutDaemon(t *testing.T) {
	mock := newMock(t, sessionScript)
	e, dir, c := claudeWorkspace(t, mock, "")
	sub := filepath.Join(dir, "sub", "deep")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	session, baseCost := claudeOnHost(t, c, sub, "please remember PINEAPPLE")
	transcript, err := agent.FindClaudeSession(filepath.Join(claudeHome(c), ".claude"), session)
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(transcript.Transcript)
	if err != nil {
		t.Fatal(err)
	}
	base := len(mock.Conversation())

	rep, r := e.forkRunWith(c, "source", "--prompt", "write the answer", "-n", "2", "--merge-mode", "manual")
	if r.code != 0 {
		t.Fatalf("fork-run: %v", r)
	}
	if cv := rep.Conversation; cv == nil || cv.Session != session || cv.From != forkrun.FromNewest || cv.Cwd != sub {
		t.Fatalf("conversation %+v, want %s (newest, started in %s)", rep.Conversation, session, sub)
	}
	seen := map[string]bool{}
	for _, f := range rep.Forks {
		sid := f.Agent.SessionID
		if f.State != forkrun.Finished || !f.Ready || sid == "" || sid == session || seen[sid] {
			t.Errorf("%s: %s (%s) ready %v, session %q (source %s, others %v)\nstderr %s", f.Name, f.State, f.Reason, f.Ready, sid, session, seen, f.AgentStderr)
		}
		seen[sid] = true
		// Two requests of the mock's 10/5 tokens, as S's one cost baseCost:
		// not S's history, which claude's total_cost_usd includes.
		if d := f.Agent.CostUSD - 2*baseCost; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: cost $%v, want its own turn's $%v", f.Name, f.Agent.CostUSD, 2*baseCost)
		}
	}
	reqs := mock.Conversation()[base:]
	if len(reqs) != 4 {
		t.Errorf("%d conversation requests from the forks, want 4", len(reqs))
	}
	for i, q := range reqs {
		body := string(q.Body)
		if !strings.Contains(body, "please remember PINEAPPLE") || strings.Count(body, "write the answer") != 1 {
			t.Errorf("request %d does not continue S with one fork's prompt", i)
		}
	}
	if after, _ := os.ReadFile(transcript.Transcript); !bytes.Equal(before, after) {
		t.Errorf("the source's session changed: %d bytes before, %d after", len(before), len(after))
	}

	// Again: the forks' sessions are newer, but S is the workspace's.
	rep, r = e.forkRunWith(c, "source", "--prompt", "write the answer", "-n", "1", "--merge-mode", "manual")
	if r.code != 0 || rep.Conversation == nil || rep.Conversation.Session != session {
		t.Errorf("second fork-run: conversation %+v, want %s: %v", rep.Conversation, session, r)
	}

	// --fresh: no history in the forks' requests.
	base = len(mock.Conversation())
	rep, r = e.forkRunWith(c, "source", "--prompt", "write the answer", "-n", "1", "--fresh", "--merge-mode", "manual")
	if r.code != 0 || rep.Conversation != nil || !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "--fresh") }) {
		t.Errorf("--fresh: conversation %+v notes %q: %v", rep.Conversation, rep.Notes, r)
	}
	for _, q := range mock.Conversation()[base:] {
		if strings.Contains(string(q.Body), "PINEAPPLE") {
			t.Error("a --fresh fork's request carries S's history")
		}
	}

	// A session that does not exist: refused before anything is forked.
	base = len(mock.Requests())
	runs := len(e.ls())
	r = e.run(c, "fork-run", "source", "--prompt", "write the answer", "-n", "2", "--session", "3f0c1f34-0000-4000-8000-000000000000")
	if r.code != exitUsage || !strings.Contains(r.stderr, "no such claude session") || strings.Count(r.stderr, "\n") > 1 {
		t.Errorf("missing session: exit %d, want %d and one line: %v", r.code, exitUsage, r)
	}
	if n := len(e.ls()); n != runs || len(mock.Requests()) != base {
		t.Errorf("a missing session forked (%d runs, were %d) or called the model", n, runs)
	}
}
