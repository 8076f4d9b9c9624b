//go:build linux

package main

// fork-run with the real Codex CLI (codex exec --json), pointed at a mock
// OpenAI Responses API on loopback (internal/agentmock): the mock model
// calls exec_command to fix app.txt, then answers. The tests skip when
// codex is not on PATH; CI installs it (.ci/run).

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/internal/agentmock"
	"github.com/tinehq/tine/internal/testkit"
)

// The commands the mock model runs: the fix, which also tries to write
// outside the workspace (codex's sandbox must refuse it), and with the
// approach "break" one that edits app.txt without fixing it (its tests
// fail).
const (
	codexOutside = "/var/tmp/tine-codex-sandbox-probe"
	codexFix     = "sed -i s/BUG/OK/ app.txt; touch " + codexOutside + " 2>/dev/null; true"
	codexBreak   = "echo broken >> app.txt"
)

// Usage the mock reports: the tool call's request, the answer's, and the
// answer of the turn that made the session a conversation fork continues.
var (
	codexToolUsage   = agentmock.OpenAIUsage{Input: 50, Output: 5}
	codexAnswerUsage = agentmock.OpenAIUsage{Input: 100, Cached: 40, Output: 10}
	codexSourceUsage = agentmock.OpenAIUsage{Input: 1000, Output: 100}
)

// codexEnv is a codex home pointed at a mock Responses API, and the
// environment that makes the codex agents use it.
type codexEnv struct {
	mock *agentmock.OpenAI
	home string   // CODEX_HOME
	vars []string // CODEX_HOME and the mock's key
}

// requireCodex skips without the real codex CLI.
func requireCodex(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("codex"); err != nil {
		t.Skip("requires the real codex CLI on PATH (npm install -g @openai/codex@0.171.0, as .ci/run does)")
	}
}

// newCodexEnv starts the mock (scripted by codexScript) and writes a
// CODEX_HOME/config.toml whose model provider is the mock.
func newCodexEnv(t *testing.T) *codexEnv {
	t.Helper()
	requireCodex(t)
	os.Remove(codexOutside)
	return codexMock(t, codexScript)
}

// codexMock starts a mock model scripted by script and writes a
// CODEX_HOME/config.toml whose model provider it is.
func codexMock(t *testing.T, script func(*agentmock.OpenAIRequest) agentmock.OpenAITurn) *codexEnv {
	t.Helper()
	return codexMockKey(t, script, "TINE_MOCK_OPENAI_KEY")
}

// codexMockKey is codexMock with a provider whose key codex reads from
// the variable key (its env_key).
func codexMockKey(t *testing.T, script func(*agentmock.OpenAIRequest) agentmock.OpenAITurn, key string) *codexEnv {
	t.Helper()
	m, err := agentmock.NewOpenAI(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	home := filepath.Join(canonicalPath(t, t.TempDir()), "codex-home")
	config := `model_provider = "mock"
[model_providers.mock]
name = "mock"
base_url = "` + m.URL + `"
wire_api = "responses"
env_key = "` + key + `"
request_max_retries = 0
stream_max_retries = 0
`
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	return &codexEnv{mock: m, home: home, vars: []string{"CODEX_HOME=" + home, key + "=mock"}}
}

// codexScript is the mock model: a prompt to remember something gets an
// answer; otherwise the first request of a turn gets an exec_command
// call that fixes app.txt and the request with its output the answer.
func codexScript(r *agentmock.OpenAIRequest) agentmock.OpenAITurn {
	users := r.UserTexts()
	last := ""
	if len(users) > 0 {
		last = users[len(users)-1]
	}
	switch {
	case r.LastIsToolOutput():
		return agentmock.OpenAITurn{Items: []agentmock.OpenAIItem{agentmock.Message("fixed app.txt")}, Usage: codexAnswerUsage}
	case strings.Contains(last, "remember"):
		return agentmock.OpenAITurn{Items: []agentmock.OpenAIItem{agentmock.Message("remembered")}, Usage: codexSourceUsage}
	}
	cmd := codexFix
	if strings.Contains(last, "Approach for this attempt: break") {
		cmd = codexBreak
	}
	return agentmock.OpenAITurn{
		Items: []agentmock.OpenAIItem{agentmock.FunctionCall("exec_command", map[string]any{"cmd": cmd})},
		Usage: codexToolUsage,
	}
}

// codexWorkspace makes a managed workspace with a bug in app.txt and a
// test that passes once it is fixed; git makes it a git repository
// first. tine.toml sets nothing about the agent.
func codexWorkspace(t *testing.T, git bool) (*env, string) {
	t.Helper()
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	dir := e.workspaceDir("cx")
	files := map[string]string{
		"app.txt":   "status BUG\n",
		"check.sh":  "grep -q OK app.txt\n",
		"tine.toml": "[fork]\ntest_command = \"sh check.sh\"\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if git {
		hostSh(t, dir, "git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm init")
	}
	e.ok("init", dir)
	return e, dir
}

// checkCodexForks checks that every fork's codex ran its command and
// finished: the command_execution succeeded and app.txt was changed; the
// tests pass in the forks whose approach is not "break".
func checkCodexForks(t *testing.T, rep *forkrun.Report, n int) {
	t.Helper()
	if len(rep.Forks) != n {
		t.Fatalf("%d forks, want %d", len(rep.Forks), n)
	}
	if fileExists(codexOutside) {
		os.Remove(codexOutside)
		t.Errorf("codex wrote %s, outside the fork: its sandbox is not in force", codexOutside)
	}
	for _, f := range rep.Forks {
		cmd, pass := codexFix, true
		if f.Approach == "break" {
			cmd, pass = codexBreak, false
		}
		ran := false
		for _, c := range f.Agent.ToolCalls {
			if strings.Contains(c.Command, cmd) && c.ExitCode != nil && *c.ExitCode == 0 {
				ran = true
			}
		}
		// app.txt only: the empty mount points codex's sandbox leaves at
		// times (.agents, .aws, .codex) are removed by tine.
		if f.State != forkrun.Finished || !ran || f.FilesChanged != 1 || f.Test == nil || f.Test.Passed != pass {
			t.Errorf("%s: %s (%s), ran %q: %v, %d files changed, test %+v\nagent %+v\nstderr %s",
				f.Name, f.State, f.Reason, cmd, ran, f.FilesChanged, f.Test, f.Agent, f.AgentStderr)
		}
	}
}

// checkMerged checks that the fork whose approach is "fix" won and was
// merged into the source.
func checkMerged(t *testing.T, rep *forkrun.Report, dir string) {
	t.Helper()
	if rep.Outcome != forkrun.OutcomeMerged || rep.Winner != "source-1" {
		t.Errorf("outcome %q (%s), winner %q, verdict %+v", rep.Outcome, rep.OutcomeDetail, rep.Winner, rep.Verdict)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "app.txt")); string(b) != "status OK\n" {
		t.Errorf("source app.txt after the merge: %q", b)
	}
}

func TestCodex_ForkRunOutsideAGitRepository(t *testing.T) { testCodexForkRun(t, false) }

func TestCodex_ForkRunInAGitRepository(t *testing.T) { testCodexForkRun(t, true) }

// testCodexForkRun runs codex with tine's defaults in two forks of a
// workspace that is a git repository or not: both run, the fix wins and is
// merged into the source.
func testCodexForkRun(t *testing.T, git bool) {
	cx := newCodexEnv(t)
	e, dir := codexWorkspace(t, git)
	rep, r := e.forkRunWith(call{vars: cx.vars}, "source", "--prompt", "fix app.txt", "-n", "2", "--agent", "codex",
		"--approach", "fix", "--approach", "break", "--merge-mode", "auto")
	if r.code != 0 {
		t.Errorf("fork-run: %v", r)
	}
	checkCodexForks(t, rep, 2)
	checkMerged(t, rep, dir)
}

// TestCodex_ConversationFork continues a session S made on the host in
// every fork: each fork's model requests carry S's history, each fork is
// a new session, S's rollout is byte-identical afterwards, and each fork
// is charged its own turn, not S's history.
//
// It runs with the defaults, and with args that make codex work in a
// confined fork the way tine's defaults do (the same argv but for how the
// conversation is continued): codex's own sandbox (bubblewrap) cannot run
// beneath tine's Landlock, which holds it to the workspace instead.
func TestCodex_ConversationFork(t *testing.T) {
	t.Run("defaults", func(t *testing.T) { testCodexConversationFork(t, "") })
	t.Run("args", func(t *testing.T) {
		testCodexConversationFork(t, "[agent.codex]\nargs = [\"--sandbox\", \"danger-full-access\", \"--skip-git-repo-check\"]\n")
	})
}

func testCodexConversationFork(t *testing.T, toml string) {
	cx := newCodexEnv(t)
	e, dir := codexWorkspace(t, false)
	if toml != "" {
		f, err := os.OpenFile(filepath.Join(dir, "tine.toml"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(toml)
		f.Close()
	}
	// S: one turn in the workspace, on the host.
	cmd := exec.Command("codex", "exec", "--json", "--skip-git-repo-check", "please remember PINEAPPLE")
	cmd.Dir, cmd.Env = dir, append(testEnviron(), cx.vars...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("codex exec: %v\n%s", err, out)
	}
	var session string
	p, _ := agent.NewParser(agent.Codex)
	ev := agent.NewEvidence(0, 0)
	agent.Consume(bytes.NewReader(out), p, ev)
	if session = ev.Snapshot().SessionID; session == "" {
		t.Fatalf("no thread id in %s", out)
	}
	rollout, err := agent.CodexRollout(cx.home, session)
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(rollout)
	if err != nil {
		t.Fatal(err)
	}
	base := len(cx.mock.Requests())

	rep, r := e.forkRunWith(call{vars: cx.vars}, "source", "--prompt", "fix app.txt", "-n", "2", "--agent", "codex",
		"--session", session, "--merge-mode", "manual")
	if r.code != 0 {
		t.Errorf("fork-run: %v", r)
	}
	checkCodexForks(t, rep, 2)
	sessions := map[string]bool{}
	for _, f := range rep.Forks {
		sid := f.Agent.SessionID
		if sid == "" || sid == session || sessions[sid] {
			t.Errorf("%s: session %q (forked from %s, others %v)", f.Name, sid, session, sessions)
		}
		sessions[sid] = true
		// Each fork's own turn: the tool call and the answer, not S's 1000/100.
		want := agent.Usage{InputTokens: codexToolUsage.Input + codexAnswerUsage.Input - codexAnswerUsage.Cached,
			CacheReadTokens: codexAnswerUsage.Cached, OutputTokens: codexToolUsage.Output + codexAnswerUsage.Output}
		if f.Agent.Tokens != want {
			t.Errorf("%s: tokens %+v, want its own turn %+v", f.Name, f.Agent.Tokens, want)
		}
	}
	// Every request of the forks continues S: its prompt, then the fork's.
	reqs := cx.mock.Requests()[base:]
	if len(reqs) != 4 {
		t.Errorf("%d model requests from the forks, want 4 (2 per fork)", len(reqs))
	}
	for i, q := range reqs {
		users := q.UserTexts()
		joined := strings.Join(users, "\n---\n")
		if !strings.Contains(joined, "please remember PINEAPPLE") || !strings.Contains(users[len(users)-1], "fix app.txt") {
			t.Errorf("request %d does not continue S with the fork's prompt: %q", i, users)
		}
		if strings.Count(joined, "fix app.txt") != 1 {
			t.Errorf("request %d holds another fork's turn: %q", i, users)
		}
	}
	after, err := os.ReadFile(rollout)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("the source's session %s changed: %d bytes before, %d after", session, len(before), len(after))
	}
}

// TestCodex_BudgetStopsMidTurn: the mock model works in steps — a long
// message (about $0.14 of output at gpt-6.2-sol's price) and a command
// that appends to steps.txt — for 10 requests, slowly. codex reports
// usage only when its turn completes; the live estimate from the streamed
// items stops the fork over its $0.30 budget mid-turn, its changes kept.
func TestCodex_BudgetStopsMidTurn(t *testing.T) {
	const steps = 10
	cx := newCodexEnv(t)
	cx.mock.Script = func(r *agentmock.OpenAIRequest) agentmock.OpenAITurn {
		if len(r.ToolOutputs()) >= steps {
			return agentmock.OpenAITurn{Items: []agentmock.OpenAIItem{agentmock.Message("done")}}
		}
		return agentmock.OpenAITurn{Items: []agentmock.OpenAIItem{
			agentmock.Message(strings.Repeat("plan ", 8000)), // 40,000 chars: 10,000 tokens
			agentmock.FunctionCall("exec_command", map[string]any{"cmd": "echo step >> steps.txt"}),
		}, Usage: agentmock.OpenAIUsage{Input: 100, Output: 10000}, Delay: 200 * time.Millisecond}
	}
	e, _ := codexWorkspace(t, false)
	rep, r := e.forkRunWith(call{vars: cx.vars}, "source", "--prompt", "work in steps", "-n", "1", "--agent", "codex",
		"--budget", "0.3", "--test", "true", "--merge-mode", "manual")
	if r.code != exitError {
		t.Errorf("exit %d, want %d (no fork finished): %v", r.code, exitError, r)
	}
	f := rep.Forks[0]
	if f.State != forkrun.BudgetKilled || !strings.Contains(f.Reason, "budget") || f.Agent.CostFinal {
		t.Errorf("state %s (%s), cost $%v final %v; want stopped by the live estimate", f.State, f.Reason, f.Agent.CostUSD, f.Agent.CostFinal)
	}
	if n := len(cx.mock.Requests()); n >= steps {
		t.Errorf("%d model requests: the turn ran to its end (%d) before the budget stopped it", n, steps+1)
	}
	if f.FilesChanged < 1 {
		t.Errorf("the stopped fork's steps.txt was not kept: %d files changed", f.FilesChanged)
	}
}

// TestCodex_UnpricedModel: [agent.codex] model names
// a model tine has no price for; the real codex runs it, its usage is
// charged at the most expensive known rate and the report says so.
func TestCodex_UnpricedModel(t *testing.T) {
	cx := newCodexEnv(t)
	e, dir := codexWorkspace(t, false)
	f, err := os.OpenFile(filepath.Join(dir, "tine.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("[agent.codex]\nmodel = \"gpt-unpriced-9\"\n")
	f.Close()
	rep, r := e.forkRunWith(call{vars: cx.vars}, "source", "--prompt", "fix app.txt", "-n", "1", "--agent", "codex",
		"--approach", "fix", "--budget", "5", "--merge-mode", "manual")
	if r.code != 0 {
		t.Fatalf("fork-run: %v", r)
	}
	if !slices.ContainsFunc(rep.Notes, func(n string) bool {
		return strings.Contains(n, `"gpt-unpriced-9" has no known price`) && strings.Contains(n, "most expensive")
	}) {
		t.Errorf("notes %q: want the unknown-model rule said", rep.Notes)
	}
	fk := rep.Forks[0]
	want := agent.OpenAIPrices().Max().Cost(fk.Agent.Tokens)
	if fk.Agent.Tokens.OutputTokens == 0 || fk.Agent.CostUSD != want || fk.CostUSD != want {
		t.Errorf("tokens %+v cost $%v (pool $%v), want $%v at the most expensive rate", fk.Agent.Tokens, fk.Agent.CostUSD, fk.CostUSD, want)
	}
	for _, q := range cx.mock.Requests() {
		if q.Model != "gpt-unpriced-9" {
			t.Errorf("codex asked for model %q", q.Model)
		}
	}
}

// TestCodex_SlowModelChangesOnlyItsFile: with a slow model (as on a
// loaded machine) codex's sandbox left the empty mount points .agents,
// .aws and .codex in a git workspace's fork (seen: 4 changed paths
// instead of 1); tine removes them, so each fork changed app.txt only.
func TestCodex_SlowModelChangesOnlyItsFile(t *testing.T) {
	cx := newCodexEnv(t)
	cx.mock.Script = func(r *agentmock.OpenAIRequest) agentmock.OpenAITurn {
		turn := codexScript(r)
		turn.Delay = 3 * time.Second
		return turn
	}
	e, _ := codexWorkspace(t, true)
	rep, r := e.forkRunWith(call{vars: cx.vars}, "source", "--prompt", "fix app.txt", "-n", "2", "--agent", "codex",
		"--approach", "fix", "--approach", "break", "--merge-mode", "manual")
	if r.code != 0 {
		t.Errorf("fork-run: %v", r)
	}
	checkCodexForks(t, rep, 2)
	for _, f := range rep.Forks {
		if cs := e.changes(f.Run); len(cs) != 1 || cs[0].Path != "app.txt" {
			t.Errorf("%s changed %+v, want app.txt only", f.Name, cs)
		}
	}
}

// A person's codex in a fork through its supervisor (tine exec as root):
// its own sandbox cannot start there, and every command of codex's failed
// while codex said it had fixed the file. tine runs it without, says so,
// and the fix lands in the fork.
func TestCodex_ExecInAConfinedFork(t *testing.T) {
	cx := newCodexEnv(t)
	e, dir := codexWorkspace(t, false)
	e.ok("fork", "source", "--name", "f")
	e.vars = append(e.vars, cx.vars...)
	r := e.tine("exec", "f", "--", "codex", "exec", "--skip-git-repo-check", "fix app.txt")
	if r.code != 0 || !strings.Contains(r.stderr, `codex runs with sandbox_mode="danger-full-access"`) {
		t.Fatalf("codex in the fork: %v, want it run, told it runs without its own sandbox", r)
	}
	if b, _ := os.ReadFile(filepath.Join(e.path("f"), "app.txt")); string(b) != "status OK\n" {
		reqs := cx.mock.Requests()
		t.Errorf("app.txt in the fork: %q; codex's command's output: %+v", b, reqs[len(reqs)-1].ToolOutputs())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "app.txt")); string(b) != "status BUG\n" {
		t.Errorf("app.txt in the source: %q", b)
	}
}

// TestCodex_CustomProviderKey: a codex whose provider takes its key from
// a variable of its own naming (model_providers.X.env_key, how OpenRouter,
// Azure and self-hosted setups are written) gets that variable in every
// fork, as OPENAI_API_KEY is passed, although *_API_KEY is a secret
// shape: before, every fork failed "Missing environment variable". A
// tine.toml that names it a secret withholds it, and then the fork's
// failure names the variable and the [secrets] inherit line that passes it.
func TestCodex_CustomProviderKey(t *testing.T) {
	requireCodex(t)
	cx := codexMockKey(t, codexScript, "TINE_TEST_ROUTER_API_KEY")
	e, dir := codexWorkspace(t, false)
	rep, r := e.forkRunWith(call{vars: cx.vars}, "source", "--prompt", "fix app.txt", "-n", "1", "--agent", "codex", "--merge-mode", "manual")
	if len(rep.Forks) != 1 || rep.Forks[0].State != forkrun.Finished {
		t.Fatalf("a fork of a codex with a custom provider key: %+v\n%v", rep.Forks, r)
	}

	toml := "[fork]\ntest_command = \"sh check.sh\"\n[secrets]\nenv = [\"TINE_TEST_ROUTER_API_KEY\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "tine.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, r = e.forkRunWith(call{vars: cx.vars}, "source", "--prompt", "fix app.txt", "-n", "1", "--agent", "codex", "--merge-mode", "manual")
	if len(rep.Forks) != 1 {
		t.Fatalf("forks %+v\n%v", rep.Forks, r)
	}
	f := rep.Forks[0]
	if f.State != forkrun.Failed || !strings.Contains(f.Reason, "TINE_TEST_ROUTER_API_KEY") ||
		!strings.Contains(f.Reason, `[secrets] inherit = ["TINE_TEST_ROUTER_API_KEY"]`) {
		t.Errorf("a fork whose provider key tine.toml withholds: %s: %s", f.State, f.Reason)
	}
	if !slices.Contains(rep.Withheld, "TINE_TEST_ROUTER_API_KEY") {
		t.Errorf("the report's withheld variables: %v", rep.Withheld)
	}
	if !strings.Contains(e.ok("events"), `"withheld":["TINE_TEST_ROUTER_API_KEY"`) {
		t.Errorf("the fork-run's start event does not name the withheld variable:\n%s", e.ok("events"))
	}
}

// TestCodex_ContinuesNewestSession: with no --session and no session
// reported by a hook, the forks continue the newest codex session started
// in the workspace (its rollout under CODEX_HOME/sessions), as Claude's
// do, and the report says so; the forks' own sessions are not taken for
// it next time. Before, codex forks silently started fresh.
func TestCodex_ContinuesNewestSession(t *testing.T) {
	cx := newCodexEnv(t)
	e, dir := codexWorkspace(t, false)
	rep, r := e.forkRunWith(call{vars: cx.vars}, "source", "--prompt", "fix app.txt", "-n", "1", "--agent", "codex", "--merge-mode", "manual")
	if rep.Conversation != nil || !strings.Contains(strings.Join(rep.Notes, "\n"), "no codex session was started in "+dir) {
		t.Errorf("without a session: conversation %+v, notes %q\n%v", rep.Conversation, rep.Notes, r)
	}
	cmd := exec.Command("codex", "exec", "--json", "--skip-git-repo-check", "please remember PINEAPPLE")
	cmd.Dir, cmd.Env = dir, append(testEnviron(), cx.vars...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("codex exec: %v\n%s", err, out)
	}
	p, _ := agent.NewParser(agent.Codex)
	ev := agent.NewEvidence(0, 0)
	agent.Consume(bytes.NewReader(out), p, ev)
	session := ev.Snapshot().SessionID
	base := len(cx.mock.Requests())
	for i := range 2 { // the second time the first's forks' sessions are newer
		rep, r = e.forkRunWith(call{vars: cx.vars}, "source", "--prompt", "fix app.txt", "-n", "1", "--agent", "codex", "--merge-mode", "manual")
		if c := rep.Conversation; c == nil || c.Session != session || c.From != forkrun.FromNewest {
			t.Fatalf("fork-run %d: conversation %+v, want %s, the newest; notes %q\n%v", i, c, session, rep.Notes, r)
		}
		checkCodexForks(t, rep, 1)
	}
	for i, q := range cx.mock.Requests()[base:] {
		if users := q.UserTexts(); !strings.Contains(strings.Join(users, "\n"), "please remember PINEAPPLE") {
			t.Errorf("request %d of the forks does not continue the session: %q", i, users)
		}
	}
}
