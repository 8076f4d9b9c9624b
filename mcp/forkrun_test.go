package mcp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/budget"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/judge"
)

// endedReport is a manual fork-run of two forks whose first won.
func endedReport() *forkrun.Report {
	return &forkrun.Report{Workspace: "w1", Group: "g1", Source: "app", Agent: "command", Mode: forkrun.Manual,
		Outcome: forkrun.OutcomeReported, OutcomeDetail: "manual mode: app-1 scored best (confidence 0.90); nothing was resolved",
		Winner: "app-1",
		Verdict: &judge.Verdict{Judge: "heuristic", Winner: "r1", Confidence: 0.9, Scores: map[string]float64{"r1": 0.95, "r2": 0.05},
			Rationale: "app-1's tests pass"},
		Forks: []*forkrun.Fork{
			{Run: "r1", Name: "app-1", Approach: "fix", State: forkrun.Finished, Test: &forkrun.Test{Passed: true},
				FilesChanged: 2, LinesAdded: 5, LinesDeleted: 1, CostUSD: 0.25, Ready: true,
				Agent: agent.Snapshot{Output: strings.Repeat("long output ", 1000), Tokens: agent.Usage{InputTokens: 100, OutputTokens: 20}}},
			{Run: "r2", Name: "app-2", Approach: "rewrite", State: forkrun.Failed, Reason: "exit 127", CostUSD: 0.5},
		},
		Budget: budget.Spending{TotalUSD: 0.75, PerForkCap: 5, AggregateCap: 0},
	}
}

// fork_run with a prompt starts a fork-run through the API, with the
// input's settings; the answer says how to follow it.
func TestServer_ForkRunPrompt(t *testing.T) {
	started := endedReport()
	started.Outcome, started.Verdict, started.Winner = forkrun.OutcomeRunning, nil, ""
	api := &fakeAPI{do: func(method, path string, body any) (int, any, error) {
		return http.StatusAccepted, httpapi.ForkRunStarted{Group: "g1", Report: started, Warnings: []string{"tine.toml:3: unknown key"}}, nil
	}}
	cs := session(t, Options{API: api, Self: "r0"})
	var out struct {
		Group  string     `json:"group"`
		Report reportView `json:"report"`
	}
	text := ok(t, cs, "fork_run", map[string]any{"prompt": "fix it", "copies": 2, "approaches": []string{"fix", "rewrite"},
		"agent_cmd": "./agent.sh", "test": "make test", "test_timeout_s": 60, "budget_usd": 0, "aggregate_budget_usd": 3,
		"merge_mode": "manual", "judge": "heuristic", "timeout_s": 120}, &out)
	for _, want := range []string{"group g1", "app-1, app-2", "fork_run_report group=g1", "tine.toml:3: unknown key"} {
		if !strings.Contains(text, want) {
			t.Errorf("answer lacks %q: %s", want, text)
		}
	}
	if out.Group != "g1" || len(out.Report.Forks) != 2 || out.Report.Outcome != forkrun.OutcomeRunning {
		t.Errorf("data %+v", out)
	}
	var sent forkrun.Request
	path, body, _ := strings.Cut(strings.TrimPrefix(api.sent[0], "POST "), " ")
	if err := json.Unmarshal([]byte(body), &sent); err != nil || path != "/v1/runs/r0/fork-run" {
		t.Fatalf("sent %s", api.sent[0])
	}
	if sent.Prompt != "fix it" || *sent.N != 2 || sent.AgentCmd != "./agent.sh" || *sent.Test != "make test" ||
		*sent.TestTimeoutS != 60 || *sent.AgentTimeoutS != 120 || sent.BudgetUSD == nil || *sent.BudgetUSD != 0 ||
		*sent.AggregateUSD != 3 || sent.MergeMode != "manual" || sent.Judge != "heuristic" || len(sent.Approaches) != 2 {
		t.Errorf("sent %s", body)
	}
}

func TestServer_ForkRunInput(t *testing.T) {
	api := &fakeAPI{do: func(method, path string, body any) (int, any, error) {
		return http.StatusBadRequest, nil, fmt.Errorf("the daemon refuses: %w", tine.ErrInvalid)
	}}
	cs := session(t, Options{API: api, Self: "r0"})
	fails(t, cs, "fork_run", map[string]any{"prompt": "x", "command": "make"}, "command does not go with prompt")
	fails(t, cs, "fork_run", map[string]any{"prompt": "x", "name": "try"}, "name does not go with prompt")
	fails(t, cs, "fork_run", map[string]any{"agent_cmd": "./a.sh"}, "give prompt")
	fails(t, cs, "fork_run", map[string]any{"prompt": "x", "merge_mode": "sometimes"}, "merge_mode")
	fails(t, cs, "fork", map[string]any{"prompt": "x"}, "prompt")
	fails(t, cs, "fork_run", map[string]any{"prompt": "x"}, "the daemon refuses")
	fails(t, cs, "fork_run_report", map[string]any{"group": ""}, "group is required")
	if len(api.sent) != 1 {
		t.Errorf("sent %q", api.sent)
	}
}

// fork_report is the report without the agents' output: outcome,
// verdict, per fork state, tests, changes, cost and score.
func TestServer_ForkReport(t *testing.T) {
	api := &fakeAPI{do: func(method, path string, body any) (int, any, error) {
		if path != "/v1/groups/g1/report" {
			return http.StatusNotFound, nil, fmt.Errorf("no %s: %w", path, tine.ErrNotFound)
		}
		return http.StatusOK, endedReport(), nil
	}}
	cs := session(t, Options{API: api})
	var v reportView
	text := ok(t, cs, "fork_run_report", map[string]any{"group": "g1"}, &v)
	if !strings.Contains(text, "fork-run g1: reported: manual mode") || !strings.Contains(text, "choose group=g1 run=app-1") ||
		strings.Contains(text, "long output") {
		t.Errorf("fork_run_report: %s", text)
	}
	a, b := v.Forks[0], v.Forks[1]
	if v.Winner != "app-1" || v.Verdict == nil || v.Verdict.Confidence != 0.9 || v.Verdict.Rationale != "app-1's tests pass" || v.TotalUSD != 0.75 {
		t.Errorf("view %+v", v)
	}
	if a.Tests != "passed" || a.FilesChanged != 2 || a.LinesAdded != 5 || a.CostUSD != 0.25 || a.Score == nil || *a.Score != 0.95 || !a.Ready {
		t.Errorf("first fork %+v", a)
	}
	if b.State != forkrun.Failed || b.Reason != "exit 127" || b.Tests != "none" {
		t.Errorf("second fork %+v", b)
	}
	fails(t, cs, "fork_run_report", map[string]any{"group": "g2"}, "no /v1/groups/g2/report")
}

// fork_cost of a fork-run's group, or of one of its forks, is the budget
// pool's count; of any other group, what it was.
func TestServer_ForkCostBudget(t *testing.T) {
	api := &fakeAPI{do: func(method, path string, body any) (int, any, error) {
		switch path {
		case "/v1/groups/g1/report":
			return http.StatusOK, endedReport(), nil
		case "/v1/runs/app-2/diff":
			return http.StatusOK, map[string]any{"run": tine.Run{ID: "r2", Name: "app-2", Group: "g1"}, "changes": []any{}}, nil
		}
		return http.StatusNotFound, nil, fmt.Errorf("no %s: %w", path, tine.ErrNotFound)
	}}
	cs := session(t, Options{API: api})
	var v forkrun.Spend
	text := ok(t, cs, "cost", map[string]any{"group": "g1"}, &v)
	if !strings.Contains(text, "spent $0.7500 in all; caps: per fork $5.00, all forks none") {
		t.Errorf("fork_cost: %s", text)
	}
	if len(v.Forks) != 2 || v.Forks[0].Tokens != 120 || v.Forks[1].USD != 0.5 || v.PerForkCapUSD != 5 {
		t.Errorf("spend %+v", v)
	}
	if text := ok(t, cs, "cost", map[string]any{"run": "app-2"}, nil); !strings.Contains(text, "app-2 spent $0.5000 (failed) in fork-run g1") {
		t.Errorf("fork_cost of a fork: %s", text)
	}
	fails(t, cs, "cost", map[string]any{"group": "g2"}, "no /v1/groups/g2/compare") // the comparison's answer
}
