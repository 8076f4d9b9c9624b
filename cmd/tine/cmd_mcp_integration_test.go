//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/runtime"
)

// mcpSession runs args (tine mcp, or tine exec RUN -- tine mcp) as an MCP
// server over stdio and connects a client to it.
func (e *env) mcpSession(args ...string) *sdk.ClientSession {
	e.t.Helper()
	return e.mcpSessionWith("", nil, args...)
}

// mcpSessionWith is mcpSession with the server started in dir ("" the
// test's) and the client's options.
func (e *env) mcpSessionWith(dir string, opts *sdk.ClientOptions, args ...string) *sdk.ClientSession {
	e.t.Helper()
	cmd := exec.Command(tineBin, args...)
	cmd.Env, cmd.Stderr, cmd.Dir = e.vars, os.Stderr, dir
	c := sdk.NewClient(&sdk.Implementation{Name: "tine-test", Version: "0"}, opts)
	cs, err := c.Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		e.t.Fatalf("tine %v: %v", args, err)
	}
	e.t.Cleanup(func() { cs.Close() })
	return cs
}

// mcpCall calls a tool; the result must be an error exactly when isErr.
func mcpCall(t *testing.T, cs *sdk.ClientSession, isErr bool, name string, args map[string]any) (string, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	tc, ok := res.Content[0].(*sdk.TextContent)
	if len(res.Content) != 1 || !ok {
		t.Fatalf("%s: content %v, want one text", name, res.Content)
	}
	if res.IsError != isErr || isErr && strings.Contains(tc.Text, "\n") {
		t.Fatalf("%s %v: isError %v: %s", name, args, res.IsError, tc.Text)
	}
	var data map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &data)
	return tc.Text, data
}

func mcpWorkspace(t *testing.T) (*env, string) {
	t.Helper()
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	dir := e.workspaceDir("agent")
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.ok("init", dir)
	return e, dir
}

// A person's agent on the host drives a whole fork-compare-merge cycle
// through tine mcp.
func TestMCP_Host(t *testing.T) {
	e, dir := mcpWorkspace(t)
	d := e.serve()
	defer d.stop(t)
	cs := e.mcpSession("mcp")

	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) != 20 {
		t.Fatalf("tools/list: %v %v", tools, err)
	}
	for _, tool := range tools.Tools {
		a := tool.Annotations
		if a == nil || !a.ReadOnlyHint && a.DestructiveHint == nil {
			t.Errorf("%s is not annotated", tool.Name)
		}
	}

	// A fake agent: it rewrites a.txt only in the fork whose approach says so.
	agent := `if [ "$TINE_APPROACH" = rewrite ]; then echo rewritten > a.txt; fi; echo "agent $TINE_APPROACH in $TINE_RUN done"`
	_, fr := mcpCall(t, cs, false, "fork_run", map[string]any{"run": "source", "copies": 2,
		"approaches": []string{"rewrite", "keep"}, "command": agent, "timeout_s": 30})
	forks := fr["forks"].([]any)
	a, b := forks[0].(map[string]any)["name"].(string), forks[1].(map[string]any)["name"].(string)
	ran := fr["ran"].([]any)
	for i, r := range ran {
		r := r.(map[string]any)
		want := fmt.Sprintf("agent %s in %s done", []string{"rewrite", "keep"}[i], []string{a, b}[i])
		if r["exit"] != 0.0 || !strings.Contains(r["stdout"].(string), want) {
			t.Errorf("the agent in fork %d: %v", i, r)
		}
	}
	if got := readFile(t, e.path(b), "a.txt"); got != "original\n" {
		t.Errorf("the keep fork changed a.txt: %q", got)
	}

	if text, _ := mcpCall(t, cs, false, "compare", map[string]any{"group": fr["group"]}); !strings.Contains(text, a) {
		t.Errorf("compare: %s", text)
	}
	if text, _ := mcpCall(t, cs, false, "diff", map[string]any{"run": a, "patch": true}); !strings.Contains(text, "+rewritten") {
		t.Errorf("diff: %s", text)
	}
	mcpCall(t, cs, false, "merge", map[string]any{"run": a})
	if got := readFile(t, dir, "a.txt"); got != "original\n" {
		t.Fatalf("a dry run merged: %q", got)
	}
	if _, m := mcpCall(t, cs, false, "merge", map[string]any{"run": a, "dry_run": false}); m["applied"] != true {
		t.Fatalf("merge: %v", m)
	}
	if got := readFile(t, dir, "a.txt"); got != "rewritten\n" {
		t.Errorf("after the merge the source has %q", got)
	}
	mcpCall(t, cs, false, "discard", map[string]any{"run": b})
	mcpCall(t, cs, true, "fork_run", map[string]any{"run": "source", "copies": 0})
	mcpCall(t, cs, true, "ps", map[string]any{"run": "nope"})
}

// mcpReport polls fork_run_report until the fork-run of group ended.
func mcpReport(t *testing.T, cs *sdk.ClientSession, group string) (string, map[string]any) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		text, rep := mcpCall(t, cs, false, "fork_run_report", map[string]any{"group": group})
		if rep["outcome"] != "running" {
			return text, rep
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fork-run still runs: %s", text)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// An agent on the host starts a fork-run in the daemon and follows it to
// its end: report, verdict and cost.
func TestMCP_ForkRun(t *testing.T) {
	e, dir := mcpWorkspace(t)
	d := e.serve()
	defer d.stop(t)
	cs := e.mcpSession("mcp")

	agent := `test "$TINE_APPROACH" = fix && echo fixed > a.txt; echo '{"tine_cost_usd": 0.01}'`
	text, st := mcpCall(t, cs, false, "fork_run", map[string]any{"run": "source", "prompt": "fix a.txt", "copies": 2,
		"approaches": []string{"fix", "noop"}, "agent_cmd": agent, "test": "grep -q fixed a.txt", "merge_mode": "manual", "budget_usd": 1})
	group, _ := st["group"].(string)
	if group == "" || !strings.Contains(text, "fork_run_report group="+group) {
		t.Fatalf("fork_run with a prompt: %s", text)
	}
	text, rep := mcpReport(t, cs, group)
	if rep["outcome"] != "reported" || rep["winner"] != "source-1" || !strings.Contains(text, "choose group="+group) {
		t.Fatalf("fork_run_report: %s", text)
	}
	if v, _ := rep["verdict"].(map[string]any); v == nil || v["judge"] != "heuristic" || v["rationale"] == "" {
		t.Errorf("verdict %v", rep["verdict"])
	}
	want := map[string]string{"source-1": "passed", "source-2": "failed"}
	for _, f := range rep["forks"].([]any) {
		f := f.(map[string]any)
		name, _ := f["name"].(string)
		if f["state"] != "finished" || f["tests"] != want[name] || f["cost_usd"] != 0.01 || f["score"] == nil {
			t.Errorf("fork %v", f)
		}
	}
	if f := rep["forks"].([]any)[0].(map[string]any); f["files_changed"] != 1.0 || f["lines_added"] != 1.0 {
		t.Errorf("the fix fork's changes: %v", f)
	}
	if text, _ := mcpCall(t, cs, false, "cost", map[string]any{"group": group}); !strings.Contains(text, "spent $0.0200 in all; caps: per fork $1.00") {
		t.Errorf("cost: %s", text)
	}
	if got := readFile(t, dir, "a.txt"); got != "original\n" {
		t.Errorf("manual mode changed the source: %q", got)
	}
	mcpCall(t, cs, true, "fork_run", map[string]any{"run": "source", "prompt": "x", "agent_cmd": "no-such-agent-program"})
	mcpCall(t, cs, true, "fork_run_report", map[string]any{"group": "g12345678"})
}

// A daemon stopped while its fork-run runs cancels it: the agents are
// killed, the forks kept, the report saved.
func TestMCP_ForkRunDaemonStops(t *testing.T) {
	e, _ := mcpWorkspace(t)
	d := e.serve()
	cs := e.mcpSession("mcp")
	_, st := mcpCall(t, cs, false, "fork_run", map[string]any{"run": "source", "prompt": "wait", "copies": 2,
		"agent_cmd": "echo started; sleep 3013", "merge_mode": "manual"})
	group, _ := st["group"].(string)
	waitAgents(t, cs, group, 2)
	d.stop(t)
	var c forkrun.Spend
	e.okJSON(&c, "cost", group, "--json")
	for _, f := range c.Forks {
		if f.State != "canceled" {
			t.Errorf("%s is %s after the daemon stopped, want canceled", f.Name, f.State)
		}
	}
	if rows := e.ls(); len(rows) != 3 {
		t.Errorf("%d live runs after the daemon stopped, want the source and both forks", len(rows))
	}
	ents, _ := os.ReadDir("/proc")
	for _, p := range ents {
		if b, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline")); err == nil && strings.Contains(string(b), "3013") {
			t.Errorf("an agent outlived the daemon: pid %s %q", p.Name(), b)
		}
	}
}

// From inside a run, a fork-run merges nothing without a person, and an
// agent in its turn cannot fork-run itself until the turn stops.
func TestMCP_ForkRunInsideRun(t *testing.T) {
	e, _ := mcpWorkspace(t)
	d := e.serve()
	defer d.stop(t)
	e.ok("fork", "source", "-n", "1")
	cs := e.mcpSession("exec", "source-1", "--", "tine", "mcp")
	args := map[string]any{"prompt": "touch b.txt", "copies": 1, "agent_cmd": "touch b.txt", "merge_mode": "auto"}
	if text, _ := mcpCall(t, cs, true, "fork_run", args); !strings.Contains(text, "merges without a person") {
		t.Errorf("auto from inside: %s", text)
	}
	args["merge_mode"] = "manual"
	prompt := hookEvent(t, "docs-examples/userpromptsubmit.input.json", map[string]string{"prompt": "try it"})
	if r := e.run(call{stdin: prompt}, "exec", "source-1", "--", "tine", "hook", "claude"); r.code != 0 {
		t.Fatalf("the prompt hook: %v", r)
	}
	// Mid-turn the fork-run is checked now and queued until the turn stops.
	if text, st := mcpCall(t, cs, false, "fork_run", args); !strings.Contains(text, "when this turn stops") || st["queued"] != true {
		t.Errorf("mid-turn: %s", text)
	}
	if rows := e.ls(); len(rows) != 2 {
		t.Errorf("%d live runs mid-turn, want the source and source-1: nothing forked yet", len(rows))
	}
	stop := hookEvent(t, "docs-examples/stop.input.json", nil)
	if r := e.run(call{stdin: stop}, "exec", "source-1", "--", "tine", "hook", "claude"); r.code != 0 {
		t.Fatalf("the stop hook: %v", r)
	}
	// Followed by the run's name: its newest fork-run.
	if _, rep := mcpReport(t, cs, "source-1"); rep["outcome"] != "reported" || rep["source"] != "source-1" {
		t.Errorf("the fork-run queued from inside: %v", rep)
	}
}

// An agent inside a fork asks: its merge and discard wait for a person,
// and it may not look at its sibling.
func TestMCP_InsideRun(t *testing.T) {
	e, dir := mcpWorkspace(t)
	d := e.serve()
	defer d.stop(t)
	e.ok("fork", "source", "-n", "2")
	e.execSh("source-1", "echo mine > a.txt")
	cs := e.mcpSession("exec", "source-1", "--", "tine", "mcp")

	if text, _ := mcpCall(t, cs, false, "diff", map[string]any{"run": "source-1", "patch": true}); !strings.Contains(text, "+mine") {
		t.Errorf("a signed patch from inside: %s", text)
	}
	text, _ := mcpCall(t, cs, false, "merge", map[string]any{"run": "source-1"})
	if !strings.Contains(text, "Dry run") {
		t.Errorf("dry run from inside: %s", text)
	}
	text, p := mcpCall(t, cs, false, "merge", map[string]any{"run": "source-1", "dry_run": false})
	id, _ := p["approval"].(string)
	if id == "" || !strings.Contains(text, "tine approve "+id) || readFile(t, dir, "a.txt") != "original\n" {
		t.Fatalf("merge from inside: %s", text)
	}
	if text, _ := mcpCall(t, cs, false, "discard", map[string]any{"run": "source-1"}); !strings.Contains(text, "tine approve") {
		t.Errorf("discard from inside: %s", text)
	}
	mcpCall(t, cs, true, "diff", map[string]any{"run": "source-2"})
	e.ok("approve", id)
	if got := readFile(t, dir, "a.txt"); got != "mine\n" {
		t.Errorf("after approval the source has %q", got)
	}
}

// tine mcp frames its answers as the MCP specification's stdio examples:
// one JSON-RPC message per line, results with text content and isError.
func TestMCP_StdioFraming(t *testing.T) {
	e, _ := mcpWorkspace(t)
	cmd := exec.Command(tineBin, "mcp")
	cmd.Env, cmd.Stderr = e.vars, os.Stderr
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer in.Close()
	lines := bufio.NewScanner(out)
	send := func(msg string) map[string]any {
		fmt.Fprintln(in, msg)
		if !lines.Scan() {
			t.Fatalf("no answer to %s", msg)
		}
		var m map[string]any
		if err := json.Unmarshal(lines.Bytes(), &m); err != nil || m["jsonrpc"] != "2.0" {
			t.Fatalf("answer %q: %v", lines.Text(), err)
		}
		return m
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"ExampleClient","version":"1.0.0"}}}`)
	fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	res := send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ps","arguments":{"run":"source"}}}`)["result"].(map[string]any)
	content := res["content"].([]any)[0].(map[string]any)
	if res["isError"] != true || content["type"] != "text" || !strings.Contains(content["text"].(string), "tine serve") {
		t.Errorf("without a daemon: %v", res)
	}
	m := send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"invalid_tool_name","arguments":{}}}`)
	if e, _ := m["error"].(map[string]any); e == nil || e["code"] != -32602.0 {
		t.Errorf("an unknown tool: %v", m)
	}
	if ids := []any{m["id"]}; !slices.Equal(ids, []any{3.0}) {
		t.Errorf("answer id %v", ids)
	}
}

// TestMCP_CommandProgressAndCancel: fork_run with a command reports the
// fork and each fork's end as progress notifications of the call's
// token; a call the client cancels stops the command in every fork (the
// daemon kills it when the request goes away), leaves no supervisor, and
// says of each fork that it was killed (before, nothing was said once the
// call was cancelled).
func TestMCP_CommandProgressAndCancel(t *testing.T) {
	e, _ := mcpWorkspace(t)
	d := e.serve()
	defer d.stop(t)
	var mu sync.Mutex
	var got []*sdk.ProgressNotificationParams
	cs := e.mcpSessionWith("", &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
		mu.Lock()
		got = append(got, r.Params)
		mu.Unlock()
	}}, "mcp")
	params := &sdk.CallToolParams{Name: "fork_run", Arguments: map[string]any{"run": "source", "copies": 2, "command": "sleep 0.2; echo hi"}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("fork_run: %v %+v", err, res)
	}
	// The client may hand the last notification over after the result.
	for i := 0; i < 40; i++ {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 3 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	var steps []float64
	for _, p := range got {
		if p.ProgressToken != "p1" || p.Total != 2 {
			t.Errorf("progress %+v: want token p1, total 2", p)
		}
		steps = append(steps, p.Progress)
	}
	mu.Unlock()
	if !slices.Equal(steps, []float64{0, 1, 2}) {
		t.Errorf("progress steps %v, want [0 1 2]", steps)
	}

	// Cancelled once the command started in both forks.
	before := map[string]bool{}
	for _, r := range e.ls() {
		before[r.ID] = true
	}
	ctx, cancel := context.WithCancel(context.Background())
	call := make(chan error, 1)
	go func() {
		params := &sdk.CallToolParams{Name: "fork_run", Arguments: map[string]any{
			"run": "source", "copies": 2, "command": "touch started; sleep 4; touch late"}}
		params.SetProgressToken("p2")
		_, err := cs.CallTool(ctx, params)
		call <- err
	}()
	var forks []string
	deadline := time.Now().Add(20 * time.Second)
	for len(forks) < 2 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		forks = forks[:0]
		for _, r := range e.ls() {
			if !before[r.ID] && fileExists(filepath.Join(e.path(r.ID), "started")) {
				forks = append(forks, r.ID)
			}
		}
	}
	if len(forks) < 2 {
		t.Fatalf("the command did not start in 2 forks: %v", forks)
	}
	cancel()
	if err := <-call; err == nil {
		t.Error("the cancelled call returned no error")
	}
	time.Sleep(5 * time.Second)
	for _, id := range forks {
		if fileExists(filepath.Join(e.path(id), "late")) {
			t.Errorf("fork %s: the command ran on after the call was cancelled", id)
		}
	}
	noSupervisors(e, forks) // nor the supervisors launched for it
	// What became of each fork is said, after the cancel, as progress.
	var killed []string
	mu.Lock()
	for _, p := range got {
		if p.ProgressToken == "p2" && strings.Contains(p.Message, "killed") {
			killed = append(killed, p.Message)
		}
	}
	mu.Unlock()
	if len(killed) != 2 {
		t.Errorf("progress after the cancel: %v, want each of the 2 forks said killed", killed)
	}
}

// TestMCP_DoesNotPinTheMount: tine mcp started in the workspace leaves
// it, so a rollback of the source (which replaces its mount) works while
// the server runs.
func TestMCP_DoesNotPinTheMount(t *testing.T) {
	e, dir := mcpWorkspace(t)
	e.ok("checkpoint", "source", "--label", "v1")
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cs := e.mcpSessionWith(dir, nil, "mcp")
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if r := e.tine("rollback", "source", "--to", "v1"); r.code != 0 {
		t.Fatalf("rollback while tine mcp runs: %v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "original\n" {
		t.Errorf("a.txt after the rollback: %q", b)
	}
}

// A fork-run started over MCP runs its agents in the caller's environment
// (tine mcp's, which the client started), as the CLI's does, not in the
// daemon's: before, every fork of a Claude fork-run failed "Not logged in"
// because the caller's sign-in variables never reached it.
func TestMCP_CallersEnv(t *testing.T) {
	e, _ := mcpWorkspace(t)
	d := e.serve()
	defer d.stop(t)
	e.vars = append(e.vars, "TINE_TEST_CALLER_MARK=the-callers") // the caller's, not the daemon's (started before)
	cs := e.mcpSession("mcp")
	_, st := mcpCall(t, cs, false, "fork_run", map[string]any{"run": "source", "prompt": "p", "copies": 1,
		"agent_cmd": `echo "mark=$TINE_TEST_CALLER_MARK" > mark.txt`, "merge_mode": "manual"})
	group, _ := st["group"].(string)
	_, rep := mcpReport(t, cs, group)
	fork := rep["forks"].([]any)[0].(map[string]any)["name"].(string)
	if got := e.ok("exec", fork, "--", "cat", "mark.txt"); got != "mark=the-callers\n" {
		t.Errorf("the agent's environment lacks the caller's variable: %q", got)
	}
	// fork_run's command too: it ran in the daemon's environment.
	_, fr := mcpCall(t, cs, false, "fork_run", map[string]any{"run": "source", "copies": 1, "command": `echo "mark=$TINE_TEST_CALLER_MARK"`})
	if out := fr["ran"].([]any)[0].(map[string]any)["stdout"]; out != "mark=the-callers\n" {
		t.Errorf("the command's environment lacks the caller's variable: %q", out)
	}
}

// TestMCP_CommandLeavesNoSupervisor: fork_run with a command runs it in
// each fork through a supervisor launched for it, and stops that
// supervisor once the command ended, as tine exec does; before, every
// fork kept one running (~31 MiB each) until it was discarded.
func TestMCP_CommandLeavesNoSupervisor(t *testing.T) {
	e, _ := mcpWorkspace(t)
	d := e.serve()
	defer d.stop(t)
	cs := e.mcpSession("mcp")
	_, fr := mcpCall(t, cs, false, "fork_run", map[string]any{"run": "source", "copies": 2, "command": "echo hi"})
	for _, f := range fr["forks"].([]any) {
		name := f.(map[string]any)["name"].(string)
		if st := psState(e, name); st != runtime.ProcStopped {
			t.Errorf("%s: supervisor %s after fork_run's command ended, want stopped", name, st)
		}
	}
	if st := psState(e, "source"); st != runtime.ProcStopped {
		t.Errorf("source: supervisor %s, want stopped", st)
	}
}

// waitAgents polls the fork-run report of group until n forks' agents run.
func waitAgents(t *testing.T, cs *sdk.ClientSession, group string, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for running := 0; running < n; {
		if time.Now().After(deadline) {
			t.Fatal("the agents were never seen running")
		}
		time.Sleep(100 * time.Millisecond)
		_, rep := mcpCall(t, cs, false, "fork_run_report", map[string]any{"group": group})
		running = 0
		for _, f := range rep["forks"].([]any) {
			if f.(map[string]any)["state"] == "running" {
				running++
			}
		}
	}
}

// TestMCP_DiscardedForksReportedTruthfully: forks discarded while their
// agents ran are reported as discarded, and the fork-run's outcome does
// not say they are kept; before, each fork failed "the supervisor hung
// up: EOF" and the outcome said "the forks are kept".
func TestMCP_DiscardedForksReportedTruthfully(t *testing.T) {
	e, _ := mcpWorkspace(t)
	d := e.serve()
	defer d.stop(t)
	cs := e.mcpSession("mcp")
	_, st := mcpCall(t, cs, false, "fork_run", map[string]any{"run": "source", "prompt": "wait", "copies": 2,
		"agent_cmd": "echo started; sleep 3015", "merge_mode": "manual"})
	group, _ := st["group"].(string)
	waitAgents(t, cs, group, 2)
	for _, f := range st["report"].(map[string]any)["forks"].([]any) {
		mcpCall(t, cs, false, "discard", map[string]any{"run": f.(map[string]any)["name"], "force": true})
	}
	text, rep := mcpReport(t, cs, group)
	for _, f := range rep["forks"].([]any) {
		f := f.(map[string]any)
		if reason, _ := f["reason"].(string); !strings.Contains(reason, "discarded") || strings.Contains(reason, "hung up") {
			t.Errorf("%s: %s: %q, want it said discarded", f["name"], f["state"], reason)
		}
	}
	if strings.Contains(text, "kept") || !strings.Contains(text, "discarded") {
		t.Errorf("the report of a fork-run whose forks were all discarded: %s", text)
	}
}

// noProcess fails t when a "sleep SECONDS" process lives.
func noProcess(t *testing.T, seconds, what string) {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, p := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		// "sleep 3016" in a shell's command, "sleep\x003016" in sleep's
		// own argv; the number alone could be part of a temporary path.
		if err == nil && (strings.Contains(string(b), "sleep "+seconds) || strings.Contains(string(b), "sleep\x00"+seconds)) {
			t.Errorf("%s: pid %s %q", what, p.Name(), b)
		}
	}
}

// noSupervisors waits a little for every fork of runs to have no
// supervisor running.
func noSupervisors(e *env, runs []string) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, r := range runs {
		for psState(e, r) != runtime.ProcStopped && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if st := psState(e, r); st != runtime.ProcStopped {
			e.t.Errorf("%s: supervisor %s after the cancel, want stopped", r, st)
		}
	}
}

// TestMCP_CancelForkRun: cancel_fork_run stops a whole group, a fork-run
// in the daemon or a fork_run command running over MCP, and says what
// became of each fork; no agent, command or supervisor is left. Before
// there was no MCP tool to stop a fork-run.
func TestMCP_CancelForkRun(t *testing.T) {
	e, _ := mcpWorkspace(t)
	d := e.serve()
	defer d.stop(t)
	cs := e.mcpSession("mcp")

	_, st := mcpCall(t, cs, false, "fork_run", map[string]any{"run": "source", "prompt": "wait", "copies": 2,
		"agent_cmd": "echo started; sleep 3016", "merge_mode": "manual"})
	group, _ := st["group"].(string)
	waitAgents(t, cs, group, 2)
	text, rep := mcpCall(t, cs, false, "cancel_fork_run", map[string]any{"group": group})
	var names []string
	for _, f := range rep["forks"].([]any) {
		f := f.(map[string]any)
		names = append(names, f["name"].(string))
		if f["state"] != "canceled" || !strings.Contains(text, f["name"].(string)+" canceled") {
			t.Errorf("fork %v after cancel_fork_run: %s", f, text)
		}
	}
	if rep["outcome"] != "canceled" {
		t.Errorf("outcome after cancel_fork_run: %s", text)
	}
	noProcess(t, "3016", "an agent outlived cancel_fork_run")
	noSupervisors(e, names)
	mcpCall(t, cs, true, "cancel_fork_run", map[string]any{"group": group}) // it ended

	// A fork_run command, canceled by its parent's name from another call.
	call := make(chan *sdk.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "fork_run", Arguments: map[string]any{
			"run": "source", "copies": 2, "command": "touch started; sleep 3017"}})
		if err != nil {
			t.Errorf("fork_run: %v", err)
		}
		call <- res
	}()
	deadline := time.Now().Add(20 * time.Second)
	var started []string
	for len(started) < 2 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		started = started[:0]
		for _, r := range e.ls() {
			if r.Group != group && r.Role != "source" && fileExists(filepath.Join(e.path(r.ID), "started")) {
				started = append(started, r.Name)
			}
		}
	}
	if len(started) < 2 {
		t.Fatalf("the command did not start in 2 forks: %v", started)
	}
	text, _ = mcpCall(t, cs, false, "cancel_fork_run", map[string]any{"group": "source"})
	for _, name := range started {
		if !strings.Contains(text, name+" killed") {
			t.Errorf("cancel_fork_run of a command does not say %s was killed: %s", name, text)
		}
	}
	res := <-call
	if res == nil || res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "killed") {
		t.Errorf("the canceled fork_run answered %+v", res)
	}
	noProcess(t, "3017", "a command outlived cancel_fork_run")
	noSupervisors(e, started)
}

// TestMCP_CancelForkRunFromAnotherSession: cancel_fork_run in a second
// MCP session (another tine mcp process) stops the command a fork_run of
// the first runs in a group's forks: each fork's command is killed, both
// answers say so fork by fork, and no command or supervisor is left.
// Before, the second session's cancel reached only fork-runs in the
// daemon ("no fork-run of group … runs in this daemon") and the command
// ran on.
func TestMCP_CancelForkRunFromAnotherSession(t *testing.T) {
	e, _ := mcpWorkspace(t)
	d := e.serve()
	defer d.stop(t)
	first, second := e.mcpSession("mcp"), e.mcpSession("mcp")
	call := make(chan *sdk.CallToolResult, 1)
	go func() {
		res, err := first.CallTool(context.Background(), &sdk.CallToolParams{Name: "fork_run", Arguments: map[string]any{
			"run": "source", "copies": 2, "command": "touch started; sleep 3018"}})
		if err != nil {
			t.Errorf("fork_run: %v", err)
		}
		call <- res
	}()
	var started []string
	group := ""
	deadline := time.Now().Add(20 * time.Second)
	for len(started) < 2 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		started = started[:0]
		for _, r := range e.ls() {
			if r.Role != "source" && fileExists(filepath.Join(e.path(r.ID), "started")) {
				started, group = append(started, r.Name), r.Group
			}
		}
	}
	if len(started) < 2 {
		t.Fatalf("the command did not start in 2 forks: %v", started)
	}
	text, _ := mcpCall(t, second, false, "cancel_fork_run", map[string]any{"group": group})
	for _, name := range started {
		if !strings.Contains(text, name+" killed") {
			t.Errorf("the second session's cancel_fork_run does not say %s was killed: %s", name, text)
		}
	}
	select {
	case res := <-call:
		if res == nil || res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "killed") {
			t.Errorf("the first session's fork_run answered %+v", res)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the first session's fork_run still runs after the second session's cancel_fork_run")
	}
	noProcess(t, "3018", "a command outlived another session's cancel_fork_run")
	noSupervisors(e, started)
}
