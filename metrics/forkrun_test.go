package metrics_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/judge"
	"github.com/tinehq/tine/metrics"
)

// forkRunEnded leaves what a fork-run leaves for the daemon: its report in
// the group's directory (unless rep is nil) and a forkrun.end event.
func (f *fixture) forkRunEnded(group, outcome string, rep *forkrun.Report) {
	f.t.Helper()
	ws := f.src.Workspace.ID
	if rep != nil {
		f.writeReport(group, rep)
	}
	if err := f.e.AppendEvent(f.ctx, ws, "", tine.EventForkRunEnd, map[string]any{"group": group, "outcome": outcome}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) writeReport(group string, rep *forkrun.Report) {
	f.t.Helper()
	b, err := json.Marshal(rep)
	if err != nil {
		f.t.Fatal(err)
	}
	writeFile(f.t, f.e.Layout().Group(f.src.Workspace.ID, group).Report(), string(b))
}

// agentFork is a fork whose agent ran for wall and cost usd (or reported
// no cost, when usd < 0).
func agentFork(run string, state forkrun.State, wall time.Duration, usd float64) *forkrun.Fork {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f := &forkrun.Fork{Run: run, Name: "app-" + run, State: state, StartedAt: start, FinishedAt: start.Add(wall + 5*time.Second),
		Agent: agent.Snapshot{StartedAt: start, FinishedAt: start.Add(wall)}}
	if usd >= 0 {
		f.CostUSD, f.Agent.CostUSD, f.Agent.CostFinal = usd, usd, true
	}
	return f
}

func TestMetrics_ForkRuns(t *testing.T) {
	f := newFixture(t)
	end := time.Now().UTC()
	merged := &forkrun.Report{Agent: "claude", JudgeKind: "heuristic", Outcome: forkrun.OutcomeMerged, FinishedAt: end,
		Forks: []*forkrun.Fork{
			agentFork("rsecret1", forkrun.Finished, 90*time.Second, 0.42),
			agentFork("rsecret2", forkrun.BudgetKilled, 30*time.Second, 1),
		},
		Verdict: &judge.Verdict{Judge: "heuristic", Winner: "rsecret1", Confidence: 0.9, Scores: map[string]float64{"rsecret1": 0.9}}}
	judgeFailed := &forkrun.Report{Agent: "command", JudgeKind: "llm", JudgeError: "the model did not answer", Outcome: forkrun.OutcomeNoWinner,
		Forks: []*forkrun.Fork{
			agentFork("rsecret3", forkrun.Finished, 10*time.Second, -1),
			{Run: "rsecret4", State: forkrun.Canceled}, // never started
		}}

	f.forkRunEnded("gbefore", forkrun.OutcomeMerged, &forkrun.Report{Agent: "codex", FinishedAt: end,
		Forks: []*forkrun.Fork{agentFork("rsecret0", forkrun.Finished, time.Minute, 2)}})
	m := metrics.New(metrics.WithForkRuns(f.e))
	f.forkRunEnded("gmerged", forkrun.OutcomeMerged, merged)
	f.forkRunEnded("gfailed", forkrun.OutcomeNoWinner, judgeFailed) // not final: no finished_at yet
	f.forkRunEnded("ggone", "sideways", nil)

	scrape(t, m)
	const first = `
# HELP tine_forkruns_total Fork-runs that ended, by agent and outcome.
# TYPE tine_forkruns_total counter
tine_forkruns_total{agent="claude",outcome="merged"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(first), "tine_forkruns_total"); err != nil {
		t.Errorf("before the second report is final: %v", err)
	}

	judgeFailed.FinishedAt = end
	f.writeReport("gfailed", judgeFailed)
	text := scrape(t, m)
	scrape(t, m) // nothing new: nothing counted twice
	const want = `
# HELP tine_forkruns_total Fork-runs that ended, by agent and outcome.
# TYPE tine_forkruns_total counter
tine_forkruns_total{agent="claude",outcome="merged"} 1
tine_forkruns_total{agent="command",outcome="no_winner"} 1
tine_forkruns_total{agent="unknown",outcome="other"} 1
# HELP tine_judge_verdicts_total Verdicts of the judge of a fork-run's forks, by judge and verdict: winner, no_winner or error.
# TYPE tine_judge_verdicts_total counter
tine_judge_verdicts_total{judge="heuristic",verdict="winner"} 1
tine_judge_verdicts_total{judge="llm",verdict="error"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "tine_forkruns_total", "tine_judge_verdicts_total"); err != nil {
		t.Error(err)
	}
	reg := m.Registry()
	for _, c := range []struct {
		name, agent string
		count       uint64
		sum         float64
	}{
		{"tine_agent_wall_seconds", "claude", 2, 120},
		{"tine_agent_wall_seconds", "command", 1, 10},
		{"tine_agent_spend_usd", "claude", 2, 1.42},
	} {
		h := histogram(t, reg, c.name, map[string]string{"agent": c.agent})
		if h.GetSampleCount() != c.count || h.GetSampleSum() < c.sum-1e-9 || h.GetSampleSum() > c.sum+1e-9 {
			t.Errorf("%s{agent=%q}: count %d sum %v, want %d and %v", c.name, c.agent, h.GetSampleCount(), h.GetSampleSum(), c.count, c.sum)
		}
	}
	for _, bad := range []string{`agent="codex"`, `tine_agent_spend_usd_count{agent="command"}`, "rsecret", "gmerged", "gfailed"} {
		if strings.Contains(text, bad) {
			t.Errorf("the exposition has %s: a fork-run from before New, an unknown spend, or an id", bad)
		}
	}
	promtool(t, text)
}
