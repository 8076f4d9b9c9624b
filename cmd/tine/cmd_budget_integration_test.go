//go:build linux

package main

// Budgets and supervisors with the real Claude Code CLI against the mock
// Anthropic API (internal/agentmock): a fork over its budget is stopped
// while its agent streams, and no fork-run or tine exec leaves a
// supervisor behind.

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/internal/agentmock"
	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/runtime"
)

// blockTurn is how long the mock holds the turn after the expensive one:
// an agent not stopped by then would reach its final result.
const blockTurn = 20 * time.Second

// TestBudget_ClaudeStoppedMidStream: claude's default model, no model
// configured; the agent writes a file, then streams a message (and a
// tool call) whose message_delta reports 2M output tokens ($40 at claude-opus-5-5's
// price), over a budget of $0.50. The fork is stopped before the agent's
// final result (the mock holds the next turn), its state is
// budget_killed and its file change is kept.
func TestBudget_ClaudeStoppedMidStream(t *testing.T) {
	released := make(chan struct{})
	mock := newMock(t, func(r agentmock.Request) (agentmock.Turn, bool) {
		switch r.Turn {
		case 0:
			return writeAnswer("partial\n"), true
		case 1:
			// A tool call, so that the agent goes on to the held turn.
			return agentmock.Turn{Text: "a long essay", OutputTokens: 2_000_000,
				Tool: &agentmock.ToolUse{Name: "Bash", Input: map[string]any{"command": "true"}}}, true
		case 2:
			select {
			case <-released:
			case <-time.After(blockTurn):
			}
			return agentmock.Turn{Text: "finished"}, true
		}
		return agentmock.Turn{}, false
	})
	defer close(released)
	e, _, c := claudeWorkspace(t, mock, "")
	t0 := time.Now()
	rep, r := e.forkRunWith(c, "source", "--prompt", "write the answer", "-n", "1", "--budget", "0.5")
	took := time.Since(t0)
	if len(rep.Forks) != 1 {
		t.Fatalf("forks %+v\n%v", rep.Forks, r)
	}
	f := rep.Forks[0]
	if f.State != forkrun.BudgetKilled {
		t.Fatalf("state %s (%s), want %s; agent %+v\n%v", f.State, f.Reason, forkrun.BudgetKilled, f.Agent, r)
	}
	if f.Agent.Result != "" || took >= blockTurn {
		t.Errorf("stopped after the agent's final result (%q, %s): want mid-stream", f.Agent.Result, took)
	}
	if f.CostUSD < 0.5 {
		t.Errorf("cost %v: want the live estimate over the budget", f.CostUSD)
	}
	b, err := os.ReadFile(filepath.Join(e.path(f.Name), "answer.txt"))
	if err != nil || string(b) != "partial\n" {
		t.Errorf("the stopped fork's answer.txt = %q, %v: want its change kept", b, err)
	}
}

// psState is the checked state of run's supervisor.
func psState(e *env, run string) string {
	e.t.Helper()
	var ps runtime.PS
	e.okJSON(&ps, "ps", run, "--json")
	if ps.State == runtime.ProcRunning && ps.Supervisor == 0 {
		e.t.Fatalf("ps %s: running without a supervisor pid", run)
	}
	return ps.State
}

// TestForkRun_StopsSupervisors: the source's supervisor runs (tine start,
// no services), so the forks were started with it; once agents and tests
// are done, no fork's supervisor remains.
func TestForkRun_StopsSupervisors(t *testing.T) {
	mock := answerMock(t)
	e, _, c := claudeWorkspace(t, mock, "")
	e.ok("start", "source")
	defer e.tine("stop", "source")
	rep, r := e.forkRunWith(c, "source", "--prompt", "write the answer", "-n", "2", "--test", "test -s answer.txt", "--merge-mode", "manual")
	if len(rep.Forks) != 2 {
		t.Fatalf("forks %+v\n%v", rep.Forks, r)
	}
	for _, f := range rep.Forks {
		if st := psState(e, f.Name); st != runtime.ProcStopped {
			t.Errorf("%s: supervisor %s after the fork-run, want stopped", f.Name, st)
		}
	}
	if st := psState(e, "source"); st != runtime.ProcRunning {
		t.Errorf("source: %s, want its own supervisor left running", st)
	}
}

// TestExec_StopsSupervisorItLaunched: tine exec on a stopped run leaves
// no supervisor behind; with --keep it stays.
func TestExec_StopsSupervisorItLaunched(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	dir := e.workspaceDir("ex")
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.ok("init", dir)
	if st := psState(e, "source"); st != runtime.ProcStopped {
		t.Fatalf("source: %s before exec", st)
	}
	if out := e.ok("exec", "source", "--", "cat", "README"); out != "x\n" {
		t.Fatalf("exec output %q", out)
	}
	if st := psState(e, "source"); st != runtime.ProcStopped {
		t.Errorf("after tine exec: supervisor %s, want stopped", st)
	}
	e.ok("exec", "--keep", "source", "--", "true")
	if st := psState(e, "source"); st != runtime.ProcRunning {
		t.Errorf("after tine exec --keep: supervisor %s, want running", st)
	}
	// A running supervisor stays after an exec without --keep: it was not
	// launched for it.
	e.ok("exec", "source", "--", "true")
	if st := psState(e, "source"); st != runtime.ProcRunning {
		t.Errorf("after tine exec on a running run: supervisor %s, want running", st)
	}
	e.ok("stop", "source")
}
