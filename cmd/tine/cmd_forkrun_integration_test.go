//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/evidence"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/grouprec"
	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/judge"
	"github.com/tinehq/tine/layout"
)

// fixtureCost is total_cost_usd of claude fixture 02, which fakeclaude
// replays for the fix, break and noop approaches.
const fixtureCost = 0.24722425

// forkRunWorkspace makes a workspace whose app.txt holds a bug, whose
// check.sh passes once it is fixed, and whose tine.toml makes fakeclaude
// the claude agent and check.sh the test command.
func forkRunWorkspace(t *testing.T, extraToml string) (*env, string) {
	t.Helper()
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	fake, err := filepath.Abs("testdata/fakeclaude")
	if err != nil {
		t.Fatal(err)
	}
	fixtures, err := filepath.Abs("../../../shared/fixtures/agents/claude/stream-json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fixtures); err != nil {
		fixtures, _ = filepath.Abs("../../agent/testdata/claude")
	}
	dir := e.workspaceDir("fr")
	files := map[string]string{
		"app.txt":  "status BUG\n",
		"check.sh": "grep -q OK app.txt\n",
		"tine.toml": "[fork]\ntest_command = \"sh check.sh\"\n\n[agent.claude]\nbinary = \"" + fake +
			"\"\nenv = { FIXTURES = \"" + fixtures + "\" }\n" + extraToml,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.ok("init", dir)
	return e, dir
}

// forkRunJSON runs fork-run with --json and decodes the report, whatever
// the exit status, which it returns.
func (e *env) forkRunJSON(args ...string) (*forkrun.Report, result) {
	e.t.Helper()
	return e.forkRunWith(call{}, args...)
}

// forkRunWith is forkRunJSON with a call (agents inherit its environment).
func (e *env) forkRunWith(c call, args ...string) (*forkrun.Report, result) {
	e.t.Helper()
	r := e.run(c, append([]string{"fork-run", "--json"}, args...)...)
	var rep forkrun.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		e.t.Fatalf("decoding the report: %v\n%v", err, r)
	}
	return &rep, r
}

func historyLines(t *testing.T, e *env) []grouprec.Resolution {
	t.Helper()
	f, err := os.Open(layout.New(e.home).History())
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []grouprec.Resolution
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var h grouprec.Resolution
		if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
			t.Fatalf("history line %q: %v", sc.Text(), err)
		}
		out = append(out, h)
	}
	return out
}

// runState is run name's state, with its resolution when it has one:
// "active", "active/merged", "discarded".
func runState(t *testing.T, e *env, name string) string {
	t.Helper()
	var rows []runRow
	e.okJSON(&rows, "ls", "--all", "--json")
	for _, r := range rows {
		if r.Name == name {
			if r.Resolution != "" {
				return string(r.State) + "/" + string(r.Resolution)
			}
			return string(r.State)
		}
	}
	t.Fatalf("run %s not listed", name)
	return ""
}

func TestForkRun_AutoMergesTheWinner(t *testing.T) {
	e, dir := forkRunWorkspace(t, "")
	rep, r := e.forkRunJSON("source", "--prompt", "fix app.txt", "-n", "3",
		"--approach", "fix it", "--approach", "break it", "--approach", "noop", "--merge-mode", "auto")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	if rep.Outcome != forkrun.OutcomeMerged || rep.Winner != "source-1" {
		t.Fatalf("outcome %s winner %q (%s); verdict %+v", rep.Outcome, rep.Winner, rep.OutcomeDetail, rep.Verdict)
	}
	if rep.Verdict == nil || rep.Verdict.Confidence < 0.6 || rep.Verdict.Judge != "heuristic" {
		t.Errorf("verdict %+v", rep.Verdict)
	}
	want := map[string]string{"source-1": "passed", "source-2": "failed", "source-3": "failed"}
	for _, f := range rep.Forks {
		if f.State != forkrun.Finished || forkrun.TestWord(f.Test) != want[f.Name] {
			t.Errorf("%s: state %s tests %s (%s), want finished %s", f.Name, f.State, forkrun.TestWord(f.Test), f.Reason, want[f.Name])
		}
		if math.Abs(f.CostUSD-fixtureCost) > 1e-9 || !f.Agent.CostFinal {
			t.Errorf("%s: cost %v final %v, want the fixture's total %v", f.Name, f.CostUSD, f.Agent.CostFinal, fixtureCost)
		}
		if f.Agent.ToolCallsTotal != 1 || len(f.Agent.Commands) != 1 || f.Agent.Commands[0] != "ls -la" {
			t.Errorf("%s: tool calls %d, commands %q", f.Name, f.Agent.ToolCallsTotal, f.Agent.Commands)
		}
		if b, err := os.ReadFile(f.AgentLog); err != nil || !strings.Contains(string(b), `"total_cost_usd":0.24722425`) {
			t.Errorf("%s: full log %s: %v", f.Name, f.AgentLog, err)
		}
	}
	if math.Abs(rep.TotalUSD()-3*fixtureCost) > 1e-9 {
		t.Errorf("total %v, want %v", rep.TotalUSD(), 3*fixtureCost)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "app.txt")); string(b) != "status OK\n" {
		t.Errorf("source app.txt = %q, want the winner's fix", b)
	}
	for name, st := range map[string]string{"source-1": "active/merged", "source-2": "discarded", "source-3": "discarded"} {
		if got := runState(t, e, name); got != st {
			t.Errorf("%s is %s, want %s", name, got, st)
		}
	}
	h := historyLines(t, e)
	if len(h) != 1 || h[0].Chosen != "source-1" || h[0].Action != "merge" || len(h[0].Discarded) != 2 || len(h[0].ForkRun) == 0 {
		t.Errorf("history %+v", h)
	}
	// Evidence stays readable after the group is resolved.
	var s forkrun.RunSummary
	e.okJSON(&s, "summary", "source-2", "--json")
	if s.Fork == nil || s.Fork.Test == nil || s.Fork.Test.Passed || s.Ready || s.RunState != "discarded" {
		t.Errorf("summary of the loser: %+v", s)
	}
	var c forkrun.Spend
	e.okJSON(&c, "cost", rep.Group, "--json")
	if len(c.Forks) != 3 || math.Abs(c.TotalUSD-3*fixtureCost) > 1e-9 || c.PerForkCapUSD != 5 {
		t.Errorf("cost %+v", c)
	}
}

func TestForkRun_ManualLeavesTheSourceAlone(t *testing.T) {
	e, dir := forkRunWorkspace(t, "")
	rep, r := e.forkRunJSON("source", "--prompt", "fix app.txt", "-n", "2",
		"--approach", "fix it", "--approach", "break it", "--merge-mode", "manual")
	if r.code != 0 || rep.Outcome != forkrun.OutcomeReported || rep.Winner != "source-1" {
		t.Fatalf("outcome %s winner %q\n%v", rep.Outcome, rep.Winner, r)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "app.txt")); string(b) != "status BUG\n" {
		t.Errorf("manual mode changed the source: %q", b)
	}
	for _, name := range []string{"source-1", "source-2"} {
		if st := runState(t, e, name); st != "active" {
			t.Errorf("%s is %s, want active", name, st)
		}
	}
	if h := historyLines(t, e); len(h) != 0 {
		t.Errorf("an unresolved group wrote history: %+v", h)
	}
	var s forkrun.RunSummary
	e.okJSON(&s, "summary", "source-1", "--json")
	if !s.Ready || !s.Winner || s.Fork.Test == nil || !s.Fork.Test.Passed {
		t.Errorf("summary of the winner: %+v", s)
	}
	// The person resolves it later: history gets its line then.
	e.ok("choose", rep.Group, "source-1", "--merge")
	if b, _ := os.ReadFile(filepath.Join(dir, "app.txt")); string(b) != "status OK\n" {
		t.Errorf("after choose: %q", b)
	}
	if h := historyLines(t, e); len(h) != 1 || h[0].Chosen != "source-1" {
		t.Errorf("history after choose: %+v", h)
	}
	// A second group, where the person overrides the recommendation.
	if err := os.WriteFile(filepath.Join(dir, "app.txt"), []byte("status BUG\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, r = e.forkRunJSON("source", "--prompt", "fix app.txt", "-n", "2",
		"--approach", "fix it", "--approach", "break it", "--merge-mode", "manual")
	if r.code != 0 || rep.Winner == "" {
		t.Fatalf("second fork-run: %v", r)
	}
	other := rep.Forks[0].Name
	if other == rep.Winner {
		other = rep.Forks[1].Name
	}
	e.ok("choose", rep.Group, other, "--merge")
	var st forkrun.JudgeStats
	e.okJSON(&st, "judge", "stats", "--json")
	want := forkrun.Tally{Groups: 2, Confirmed: 1, Overridden: 1, Agreement: 0.5}
	if st.All != want || st.Judges["heuristic"] != want || len(st.Weeks) != 1 {
		t.Errorf("judge stats %+v; want %+v", st, want)
	}
	if out := e.ok("judge", "stats"); !strings.Contains(out, "heuristic") || !strings.Contains(out, "50%") ||
		!strings.Contains(out, "weights of fr (learned from 1 choices)") {
		t.Errorf("judge stats:\n%s", out)
	}
	// The override taught the workspace's weights; a reset forgets them.
	if w := st.Weights["fr"]; w.Updates != 1 || w.Weights == judge.DefaultWeights() {
		t.Errorf("weights after an override: %+v", st.Weights)
	}
	e.ok("judge", "reset-weights", "fr")
	e.okJSON(&st, "judge", "stats", "--json")
	if w := st.Weights["fr"]; w.Updates != 0 || w.Weights != judge.DefaultWeights() {
		t.Errorf("weights after reset-weights: %+v", st.Weights)
	}
	if r := e.run(call{}, "judge", "reset-weights", "nosuch"); r.code == 0 {
		t.Errorf("reset-weights of an unknown workspace succeeded: %v", r)
	}
}

func TestForkRun_BudgetKillsMidStream(t *testing.T) {
	e, _ := forkRunWorkspace(t, "")
	rep, r := e.forkRunWith(call{vars: []string{"FAKE_DELAY=0.05"}}, "source", "--prompt", "fix app.txt", "-n", "2",
		"--approach", "cheap fix", "--approach", "slow and expensive", "--budget", "0.20", "--merge-mode", "manual")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	slow := rep.Fork("source-2")
	if slow == nil || slow.State != forkrun.BudgetKilled {
		t.Fatalf("slow fork: %+v", slow)
	}
	if fileExists(filepath.Join(e.path("source-2"), "finished-anyway")) {
		t.Error("the killed agent went on past its budget")
	}
	// Killed when fixture 01's message took the estimate from $0.118 to $0.253.
	if slow.CostUSD < 0.2 || slow.CostUSD > 0.26 || slow.Agent.Result != "" {
		t.Errorf("slow fork: cost %v result %q", slow.CostUSD, slow.Agent.Result)
	}
	if _, scored := rep.Verdict.Scores[slow.Run]; scored || rep.Winner != "source-1" {
		t.Errorf("a budget-killed fork was judged: %+v", rep.Verdict)
	}
	if cheap := rep.Fork("source-1"); cheap.State != forkrun.Finished || math.Abs(cheap.CostUSD-0.1354875) > 1e-9 {
		t.Errorf("cheap fork: %s $%v", cheap.State, cheap.CostUSD)
	}
}

// processesWith lists host processes whose command line contains s.
func processesWith(s string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, d := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s) {
			out = append(out, d.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

func TestForkRun_TestTimeoutKillsTheWholeTree(t *testing.T) {
	e, _ := forkRunWorkspace(t, "")
	// A background child, one in a session of its own, and the foreground.
	test := "sleep 3107 & setsid sleep 3108 & sh -c 'sleep 3109 & wait' & sleep 3110"
	rep, r := e.forkRunJSON("source", "--prompt", "p", "-n", "1", "--agent-cmd", "touch done", // real work: a fork that changes nothing is not ready
		"--test", test, "--test-timeout", "1s", "--merge-mode", "manual")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	f := rep.Forks[0]
	if f.State != forkrun.Finished || f.Test == nil || !f.Test.TimedOut || f.Test.Passed || f.Test.Seconds > 10 {
		t.Fatalf("fork %s, test %+v", f.State, f.Test)
	}
	for _, n := range []string{"sleep 3107", "sleep 3108", "sleep 3109", "sleep 3110"} {
		if ps := processesWith(n); len(ps) > 0 {
			t.Errorf("left running after the test timed out: %v", ps)
		}
	}
}

func TestForkRun_RefusesBeforeForking(t *testing.T) {
	// The real codex may be installed (CI installs it): name a binary that
	// is not, as a machine without codex would lack it.
	e, _ := forkRunWorkspace(t, "[agent.codex]\nbinary = \"no-such-codex\"\n")
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--agent", "codex"}, exitUnsupported, "codex agent: agent binary not found"},
		{[]string{"--agent-cmd", "./no-such-agent.sh"}, exitUnsupported, "not an executable file"},
		{[]string{"--agent-cmd", "true", "--merge-mode", "yolo"}, exitUsage, "merge mode"},
		{[]string{"--agent-cmd", "true", "-n", "9"}, exitUsage, "max_branches"},
		{[]string{"--agent-cmd", "true", "-n", "0"}, exitUsage, "use 1 to 8 forks ([fork] max_branches = 8)"},
		{[]string{"--agent-cmd", "true", "--judge", "llm"}, exitUsage, "[judge.llm] model"},
		{[]string{"--agent-cmd", "true", "--budget", "-1"}, exitUsage, "budget"},
	}
	// A PATH without codex (CI installs it in /usr/bin): only sh and true.
	bin := t.TempDir()
	for _, p := range []string{"/bin/sh", "/bin/true"} {
		if err := os.Symlink(p, filepath.Join(bin, filepath.Base(p))); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cases {
		r := e.run(call{vars: []string{"PATH=" + bin}}, append([]string{"fork-run", "source", "--prompt", "p"}, c.args...)...)
		if r.code != c.code || !strings.Contains(r.stderr, c.msg) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: want exit %d and one line with %q\n%v", c.args, c.code, c.msg, r)
		}
	}
	var rows []runRow
	e.okJSON(&rows, "ls", "--all", "--json")
	if len(rows) != 1 {
		t.Errorf("a refused fork-run left runs behind: %d rows", len(rows))
	}
}

func TestForkRun_NothingJudgeable(t *testing.T) {
	e, _ := forkRunWorkspace(t, "")
	// Each agent's first charge is over its cap: refused whole, fork stopped.
	rep, r := e.forkRunJSON("source", "--prompt", "p", "-n", "2", "--budget", "0.5",
		"--agent-cmd", `echo '{"tine_cost_usd": 1}'; sleep 20; echo late > late.txt`)
	if r.code != exitError || rep.Outcome != forkrun.OutcomeNoWinner || rep.Verdict != nil {
		t.Fatalf("outcome %s\n%v", rep.Outcome, r)
	}
	for _, f := range rep.Forks {
		if f.State != forkrun.BudgetKilled || f.CostUSD != 0 || f.Elapsed(f.FinishedAt) > 15e9 {
			t.Errorf("%s: %s $%v in %v (%s)", f.Name, f.State, f.CostUSD, f.Elapsed(f.FinishedAt), f.Reason)
		}
		if !strings.Contains(f.Reason, "over its cap") {
			t.Errorf("%s: reason %q", f.Name, f.Reason)
		}
	}
}

func TestForkRun_ConfigWarningsAndLiveProgress(t *testing.T) {
	e, dir := forkRunWorkspace(t, "\n[judge.llm]\nprovider = \"anthropic\"\nmodle = \"x\"\n")
	r := e.run(call{dir: dir}, "fork-run", "source", "--prompt", "p", "-n", "1", "--agent-cmd", "echo hi > hi.txt")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	if !strings.Contains(r.stderr, `/fr/tine.toml:10: unknown key "judge.llm.modle"`) {
		t.Errorf("no warning with file:line for the typo:\n%s", r.stderr)
	}
	for _, want := range []string{"source-1 running", "source-1 finished", "awaiting_choice: source-1 is recommended"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("progress lacks %q:\n%s", want, r.stdout)
		}
	}
}

// judgeServer is an OpenAI-compatible endpoint that votes for the
// candidate whose diff fixes app.txt, as a model reading the prompt would.
func judgeServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	block := regexp.MustCompile(`label="([A-Z])">\n([^\n]*)`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer test-key" {
			http.Error(w, "wrong path or key", http.StatusUnauthorized)
			return
		}
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		scores, winner := map[string]float64{}, ""
		for _, m := range req.Messages {
			for _, b := range block.FindAllStringSubmatch(m.Content, -1) {
				scores[b[1]] = 0.1
				if strings.Contains(b[2], "+status OK") {
					scores[b[1]], winner = 0.9, b[1]
				}
			}
		}
		answer, _ := json.Marshal(map[string]any{"winner": winner, "confidence": 0.9, "scores": scores, "rationale": "it fixes app.txt"})
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": string(answer)}}}})
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestForkRun_VoteWithTheLLMJudge(t *testing.T) {
	srv, calls := judgeServer(t)
	e, dir := forkRunWorkspace(t, "\n[judge.llm]\nprovider = \"openai\"\nbase_url = \""+srv.URL+"/v1\"\nmodel = \"judge-1\"\napi_key_env = \"TEST_JUDGE_KEY\"\n")
	rep, r := e.forkRunWith(call{vars: []string{"TEST_JUDGE_KEY=test-key"}}, "source", "--prompt", "fix app.txt", "-n", "2",
		"--approach", "break it", "--approach", "fix it", "--judge", "llm", "--merge-mode", "vote")
	if r.code != 0 {
		t.Fatalf("exit %d: %s; judge error: %s", r.code, rep.OutcomeDetail, rep.JudgeError)
	}
	v := rep.Verdict
	if v == nil || v.Judge != "vote" || len(v.Rounds) != 3 || v.Rounds[0].Judge != "llm" || calls.Load() != 3 {
		t.Fatalf("verdict %+v after %d calls", v, calls.Load())
	}
	if rep.Outcome != forkrun.OutcomeMerged || rep.Winner != "source-2" || math.Abs(v.Confidence-0.9) > 1e-9 {
		t.Errorf("outcome %s winner %s confidence %v: %s", rep.Outcome, rep.Winner, v.Confidence, rep.OutcomeDetail)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "app.txt")); string(b) != "status OK\n" {
		t.Errorf("source app.txt = %q", b)
	}
}

// TestForkRun_PairwiseJudge: a fork whose tests fail is not compared; the
// two that pass make the same change, and judgeServer, reading both as
// fixes, names the one shown last in both orders, so the pair splits, the
// verdict cannot tell, and nothing is merged automatically.
func TestForkRun_PairwiseJudge(t *testing.T) {
	srv, calls := judgeServer(t)
	e, dir := forkRunWorkspace(t, "\n[judge.llm]\nprovider = \"openai\"\nbase_url = \""+srv.URL+"/v1\"\nmodel = \"judge-1\"\napi_key_env = \"TEST_JUDGE_KEY\"\n")
	rep, r := e.forkRunWith(call{vars: []string{"TEST_JUDGE_KEY=test-key"}}, "source", "--prompt", "fix app.txt", "-n", "3",
		"--approach", "break it", "--approach", "fix it", "--approach", "cheap fix", "--judge", "pairwise")
	v := rep.Verdict
	if v == nil || v.Judge != "pairwise" || len(v.Rounds) != 2 || calls.Load() != 2 {
		t.Fatalf("exit %d, verdict %+v after %d calls; want 2 comparisons: %s", r.code, v, calls.Load(), rep.OutcomeDetail)
	}
	if v.Clears(rep.Threshold) || v.CannotTell == "" || !strings.Contains(v.Rationale, "source-1: tests failed") {
		t.Errorf("verdict %+v; want a tie's calibrated confidence below %v, cannot tell, source-1 gated", v, rep.Threshold)
	}
	if rep.Outcome == forkrun.OutcomeMerged {
		t.Errorf("outcome %s: a split pair merged automatically", rep.Outcome)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "app.txt")); string(b) != "status BUG\n" {
		t.Errorf("source app.txt = %q; want it untouched", b)
	}
}

// TestForkRun_StopWhenConfident: the fork that fixes app.txt finishes
// first, its tests and holdout pass, and the slow fork (which would sleep
// 10 s, then touch finished-anyway) is stopped early, its changes kept.
func TestForkRun_StopWhenConfident(t *testing.T) {
	e, _ := forkRunWorkspace(t, "")
	if r := e.tine("fork-run", "source", "--prompt", "fix app.txt", "--approach", "fix it", "--stop-when-confident"); r.code != exitUsage ||
		!strings.Contains(r.stderr, "needs a holdout or regression command") {
		t.Errorf("without a holdout: %+v", r)
	}
	start := time.Now()
	rep, r := e.forkRunWith(call{vars: []string{"FAKE_DELAY=0.05"}}, "source", "--prompt", "fix app.txt", "-n", "2", "--approach", "fix it", "--approach", "slow down",
		"--holdout-test", "grep -q OK app.txt", "--stop-when-confident", "--merge-mode", "manual")
	if took := time.Since(start); took > 9*time.Second {
		t.Errorf("fork-run took %s; the slow fork was not stopped", took)
	}
	es := rep.EarlyStop
	if r.code != 0 || es == nil || es.Fork != "source-1" || len(es.Stopped) != 1 || es.Stopped[0] != "source-2" || es.Confidence < rep.Threshold {
		t.Fatalf("exit %d, early stop %+v: %s", r.code, es, rep.OutcomeDetail)
	}
	if f := rep.Forks[1]; f.State != forkrun.StoppedEarly || !strings.Contains(f.Reason, "stopped early") {
		t.Errorf("source-2: %s %q; want stopped_early", f.State, f.Reason)
	}
	if es.SpentUSD <= 0 || es.SavedUSD < 0 {
		t.Errorf("early stop %+v; want what source-2 had spent", es)
	}
	if rep.Winner != "source-1" || rep.Outcome != forkrun.OutcomeReported {
		t.Errorf("winner %q outcome %s: %s", rep.Winner, rep.Outcome, rep.OutcomeDetail)
	}
	if out := e.ok("ls"); !strings.Contains(out, "source-2") {
		t.Errorf("the stopped fork is gone:\n%s", out)
	}
}

// TestForkRun_Synthesize: two forks each do half of the task and fail its
// test; the synthesis fork, started after them, finds both halves in its
// prompt (and not the holdout), does both and wins.
func TestForkRun_Synthesize(t *testing.T) {
	e, _ := forkRunWorkspace(t, "")
	agentCmd := `case "$TINE_APPROACH" in
ok) sed -i s/BUG/OK/ app.txt ;;
extra) echo x > extra.txt ;;
synthesis*)
	printf '%s\n' "$TINE_PROMPT"
	case "$TINE_PROMPT" in *"+status OK"*) sed -i s/BUG/OK/ app.txt ;; esac
	case "$TINE_PROMPT" in *"b/extra.txt"*) echo x > extra.txt ;; esac ;;
esac`
	rep, r := e.forkRunJSON("source", "--prompt", "fix app.txt and add extra.txt", "--approach", "ok", "--approach", "extra",
		"--agent-cmd", agentCmd, "--test", "grep -q OK app.txt && test -f extra.txt",
		"--holdout-test", "grep -q OK app.txt # HOLDOUT-MARK", "--synthesize", "--merge-mode", "manual")
	if r.code != 0 || len(rep.Forks) != 3 {
		t.Fatalf("exit %d, %d forks: %s", r.code, len(rep.Forks), rep.OutcomeDetail)
	}
	s := rep.Forks[2]
	if s.Approach != forkrun.SynthesisApproach || s.State != forkrun.Finished || s.Test == nil || !s.Test.Passed {
		t.Fatalf("synthesis fork %s %q: state %s test %+v", s.Name, s.Approach, s.State, s.Test)
	}
	out := s.Agent.Output
	for _, want := range []string{"fix app.txt and add extra.txt", `=== source-1 (approach: "ok"): finished, tests failed`, "+status OK", "source-2", "b/extra.txt"} {
		if !strings.Contains(out, want) {
			t.Errorf("the synthesis prompt lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "HOLDOUT-MARK") {
		t.Error("the synthesis prompt shows the holdout")
	}
	if s.StartedAt.Before(rep.Forks[0].FinishedAt) || s.StartedAt.Before(rep.Forks[1].FinishedAt) {
		t.Errorf("the synthesis fork started at %s, before the others ended", s.StartedAt)
	}
	if rep.Winner != s.Name {
		t.Errorf("winner %q; want the synthesis fork: %s", rep.Winner, rep.OutcomeDetail)
	}
}

func TestForkRun_Conflict(t *testing.T) {
	e, dir := forkRunWorkspace(t, "")
	done := make(chan struct{})
	var rep *forkrun.Report
	var r result
	go func() {
		defer close(done)
		rep, r = e.forkRunWith(call{vars: []string{"FAKE_DELAY=0.5"}}, "source", "--prompt", "fix app.txt", "-n", "1",
			"--approach", "fix it", "--merge-mode", "auto", "--test", "true", "--confidence", "0.5") // a conflicting fork's evidence caps it at 0.6
	}()
	// The person edits the same line in the source while the agent works
	// (once the fork exists, so the edit is not in its fork point).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if r := e.tine("path", "source-1"); r.code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no fork after 30 s")
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "app.txt"), []byte("status EDITED\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	<-done
	if r.code != exitConflict || rep.Outcome != forkrun.OutcomeConflict || len(rep.Conflicts) != 1 || rep.Conflicts[0] != "app.txt" {
		t.Fatalf("outcome %s conflicts %v: %s\n%v", rep.Outcome, rep.Conflicts, rep.OutcomeDetail, r)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "app.txt")); string(b) != "status EDITED\n" {
		t.Errorf("the source's edit was overwritten: %q", b)
	}
	if st := runState(t, e, "source-1"); st != "active" {
		t.Errorf("the fork is %s, want kept active", st)
	}
}

func TestForkRun_AccountsOnePerFork(t *testing.T) {
	e, _ := forkRunWorkspace(t, "\n[[account]]\nname = \"team-a\"\nenv = { ACCT_KEY = \"key-a\" }\n[[account]]\nname = \"team-b\"\nenv = { ACCT_KEY = \"key-b\" }\n")
	rep, r := e.forkRunJSON("source", "--prompt", "p", "-n", "3", "--merge-mode", "manual",
		"--agent-cmd", `echo "$ACCT_KEY" > acct.txt`)
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	if len(rep.Forks) != 2 || len(rep.Notes) == 0 || !strings.Contains(strings.Join(rep.Notes, " "), "2") {
		t.Fatalf("%d forks, notes %q: want N reduced to the 2 accounts, and said", len(rep.Forks), rep.Notes)
	}
	got := map[string]string{}
	for _, f := range rep.Forks {
		b, err := os.ReadFile(filepath.Join(e.path(f.Name), "acct.txt"))
		if err != nil {
			t.Fatal(err)
		}
		got[f.Account] = strings.TrimSpace(string(b))
	}
	if got["team-a"] != "key-a" || got["team-b"] != "key-b" {
		t.Errorf("accounts seen by the agents: %v", got)
	}
	// On the progress output the reduction is said before anything runs.
	out := e.ok("fork-run", "source", "--prompt", "p", "-n", "3", "--merge-mode", "manual", "--agent-cmd", "touch done")
	if first, _, _ := strings.Cut(out, "\n"); !strings.HasPrefix(first, "note: ") || !strings.Contains(first, "2") {
		t.Errorf("the first line is %q, want the note that N was reduced", first)
	}
}

func TestForkRun_InterruptExits130(t *testing.T) {
	e, _ := forkRunWorkspace(t, "")
	cmd := exec.Command(tineBin, "fork-run", "source", "--prompt", "p", "-n", "2", "--agent-cmd", "echo go; sleep $((3300+11))", "--json") // the CLI's own argv must not match
	cmd.Env = e.vars
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); len(processesWith("sleep 3311")) < 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the agents never started")
		}
	}
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Fatalf("exit %v, want %d", err, exitInterrupted)
	}
	var rep forkrun.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Outcome != forkrun.OutcomeCanceled {
		t.Fatalf("report: outcome %q (%v)", rep.Outcome, err)
	}
	for _, f := range rep.Forks {
		if f.State != forkrun.Canceled || runState(t, e, f.Name) != "active" {
			t.Errorf("%s: %s, run %s", f.Name, f.State, runState(t, e, f.Name))
		}
	}
	if ps := processesWith("sleep 3311"); len(ps) > 0 {
		t.Errorf("agents left running: %v", ps)
	}
}

func TestForkRun_Codex(t *testing.T) {
	fake, _ := filepath.Abs("testdata/fakecodex")
	fixtures, _ := filepath.Abs("../../../shared/fixtures/agents/codex/exec-json")
	if _, err := os.Stat(fixtures); err != nil {
		fixtures, _ = filepath.Abs("../../agent/testdata/codex")
	}
	e, _ := forkRunWorkspace(t, "\n[agent.codex]\nbinary = \""+fake+"\"\nmodel = \"gpt-5-codex\"\nenv = { FIXTURES = \""+fixtures+"\" }\n")
	rep, r := e.forkRunJSON("source", "--prompt", "fix app.txt", "-n", "2", "--agent", "codex",
		"--approach", "fix it", "--approach", "leave it", "--merge-mode", "manual")
	if r.code != 0 {
		t.Fatalf("%v", r)
	}
	// What the same fixture costs when the agent package parses it here.
	p, _ := agent.NewParser(agent.Codex, agent.WithModel("gpt-5-codex"))
	ev := agent.NewEvidence(0, 0)
	fh, err := os.Open(filepath.Join(fixtures, "04-file-change-add.agentcmd.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	agent.Consume(fh, p, ev)
	want := ev.Snapshot()
	if want.CostUSD <= 0 {
		t.Fatalf("the fixture has no priced usage: %+v", want.Tokens)
	}
	for _, f := range rep.Forks {
		if f.State != forkrun.Finished || math.Abs(f.CostUSD-want.CostUSD) > 1e-9 || f.Agent.Tokens != want.Tokens {
			t.Errorf("%s: %s, cost %v tokens %+v; want %v %+v", f.Name, f.State, f.CostUSD, f.Agent.Tokens, want.CostUSD, want.Tokens)
		}
		argv, _ := os.ReadFile(filepath.Join(e.path(f.Name), "argv.txt"))
		got := strings.Split(strings.TrimSuffix(string(argv), "\x00"), "\x00")
		if len(got) < 5 || got[0] != "exec" || got[1] != "--json" || got[2] != "--model" || got[3] != "gpt-5-codex" ||
			!strings.HasPrefix(got[len(got)-1], "fix app.txt") || !strings.Contains(got[len(got)-1], f.Approach) {
			t.Errorf("%s: codex argv %q", f.Name, got)
		}
	}
	if rep.Winner != "source-1" {
		t.Errorf("winner %q: %+v", rep.Winner, rep.Verdict)
	}
}

// TestForkRun_OneForkPerApproach: without -n, a fork-run makes one fork per
// approach (two approaches made three forks, the third with none).
func TestForkRun_OneForkPerApproach(t *testing.T) {
	e, _ := forkRunWorkspace(t, "")
	rep, r := e.forkRunJSON("source", "--prompt", "p", "--approach", "a", "--approach", "b",
		"--agent-cmd", "touch done", "--merge-mode", "manual")
	if r.code != 0 || len(rep.Forks) != 2 {
		t.Fatalf("%d forks, want one per approach: %v", len(rep.Forks), r)
	}
}

// TestForkRun_HoldoutDirIsHidden: the holdout's files, in --holdout-dir
// outside the workspace, cannot be read by a fork's agent (its cat
// fails), yet the holdout command finds them in $TINE_HOLDOUT once the
// agents ended, and its outcome counts: the fork that fixed the bug passes
// it, the one that did not fails it.
func TestForkRun_HoldoutDirIsHidden(t *testing.T) {
	e, dir := forkRunWorkspace(t, "")
	holdout := t.TempDir()
	const mark = "HOLDOUT-SECRET-7f3a"
	if err := os.WriteFile(filepath.Join(holdout, "expected.txt"), []byte(mark+"\nOK\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--holdout-dir", holdout}, exitUsage, "needs a holdout command"},
		{[]string{"--holdout-dir", dir, "--holdout-test", "true"}, exitUsage, "inside workspace"},
		{[]string{"--holdout-dir", filepath.Join(holdout, "expected.txt"), "--holdout-test", "true"}, exitUsage, "not a directory"},
	} {
		args := append([]string{"fork-run", "source", "--prompt", "p", "-n", "1", "--agent-cmd", "true"}, tt.args...)
		if r := e.tine(args...); r.code != tt.code || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: exit %d %q; want %d and %q", tt.args, r.code, r.stderr, tt.code, tt.want)
		}
	}
	if out := e.ok("ls"); strings.Contains(out, "source-1") {
		t.Fatalf("a refused fork-run left a fork:\n%s", out)
	}
	agentCmd := `cat ` + filepath.Join(holdout, "expected.txt") + ` 2>&1 && echo READ-IT; ls -A ` + holdout + `
case "$TINE_APPROACH" in fix) sed -i s/BUG/OK/ app.txt ;; *) echo x > other.txt ;; esac`
	rep, r := e.forkRunJSON("source", "--prompt", "fix app.txt", "--approach", "fix", "--approach", "other",
		"--agent-cmd", agentCmd, "--holdout-dir", holdout,
		"--holdout-test", `grep -q `+mark+` "$TINE_HOLDOUT/expected.txt" && grep -q OK app.txt`, "--merge-mode", "manual")
	if r.code != 0 || len(rep.Forks) != 2 {
		t.Fatalf("exit %d, %d forks: %s\n%v", r.code, len(rep.Forks), rep.OutcomeDetail, r)
	}
	for i, f := range rep.Forks {
		if strings.Contains(f.Agent.Output, mark) || strings.Contains(f.Agent.Output, "READ-IT") || !strings.Contains(f.Agent.Output, "No such file") {
			t.Errorf("%s's agent read the holdout, or its cat did not fail:\n%s", f.Name, f.Agent.Output)
		}
		var h *evidence.Check
		if f.Evidence != nil {
			h = f.Evidence.Holdout
		}
		if want := i == 0; h == nil || h.Error != "" || h.Passed != want {
			t.Errorf("%s: holdout %+v; want it run, passed %v", f.Name, h, want)
		}
	}
	if rep.Verdict == nil || rep.Verdict.Winner != rep.Forks[0].Run {
		t.Errorf("verdict %+v; want the fork that passes the holdout", rep.Verdict)
	}
	// --stop-when-confident runs the holdout, with its directory, as soon
	// as the first fork ended: it passes there, so the slow fork stops.
	start := time.Now()
	rep, r = e.forkRunJSON("source", "--prompt", "fix app.txt", "--approach", "fix", "--approach", "slow",
		"--agent-cmd", `case "$TINE_APPROACH" in fix) sed -i s/BUG/OK/ app.txt ;; *) sleep 30; echo x > other.txt ;; esac`,
		"--holdout-dir", holdout, "--holdout-test", `grep -q `+mark+` "$TINE_HOLDOUT/expected.txt" && grep -q OK app.txt`,
		"--stop-when-confident", "--merge-mode", "manual")
	if es := rep.EarlyStop; r.code != 0 || es == nil || es.Fork != rep.Forks[0].Name || time.Since(start) > 25*time.Second {
		t.Errorf("exit %d, early stop %+v after %s; want the fixing fork to stop the slow one: %s", r.code, es, time.Since(start), rep.OutcomeDetail)
	}
}
