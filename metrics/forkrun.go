package metrics

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/forkrun"
)

// Label values of the fork-run metrics. A value outside these sets is
// counted as "other", so a report cannot make a series of its own.
var (
	agentKinds = []string{"claude", "codex", "command"}
	judgeKinds = []string{"heuristic", "llm", "pairwise", "vote"}
	outcomes   = []string{forkrun.OutcomeMerged, forkrun.OutcomeAwaitingChoice, forkrun.OutcomeReported,
		forkrun.OutcomeConflict, forkrun.OutcomeNoWinner, forkrun.OutcomeFailed}
)

// Verdicts of the judge, the verdict label of tine_judge_verdicts_total.
const (
	VerdictWinner   = "winner"    // the judge named a winner
	VerdictNoWinner = "no_winner" // the judge named none
	VerdictError    = "error"     // the judge failed
)

// reportGrace is how long a fork-run's end waits for the final save of its
// report (fork-run logs forkrun.end a moment before it); after that the
// report is read as it is.
var reportGrace = 10 * time.Second

// feedBatch is how many events one read of the log takes.
const feedBatch = 500

// WithForkRuns feeds tine_forkruns_total, tine_judge_verdicts_total,
// tine_agent_wall_seconds and tine_agent_spend_usd from the fork-runs that
// end while the metrics are served. Fork-run runs in the process of the
// tine fork-run command, not in the daemon; what the daemon sees of it is
// the forkrun.end event in e's log and the report it leaves in the group's
// directory. Each scrape reads the events logged since the last one, and
// the report of each fork-run that ended. Fork-runs that ended before New
// are not counted, as a counter starts at zero with its process.
func WithForkRuns(e *engine.Engine) Option {
	return func(m *Metrics) {
		f := &forkRunFeed{e: e, after: -1}
		ctx, cancel := context.WithTimeout(context.Background(), ScrapeTimeout)
		defer cancel()
		if n, err := e.LastSeq(ctx); err == nil {
			f.after = n
		}
		m.feed = f
	}
}

// forkRunFeed reads forkrun.end events from an engine's log, in order.
type forkRunFeed struct {
	e     *engine.Engine
	mu    sync.Mutex
	after int64 // the last event read; -1 until the log's end is known
}

// catchUp observes in m the fork-runs that ended since the last call. It
// stops early at a fork-run whose report is not final yet, to read it at
// the next call.
func (f *forkRunFeed) catchUp(ctx context.Context, m *Metrics) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.after < 0 {
		n, err := f.e.LastSeq(ctx)
		if err != nil {
			return fmt.Errorf("reading the event log: %w", err)
		}
		f.after = n
		return nil
	}
	for {
		evs, err := f.e.Events(ctx, tine.EventFilter{After: f.after, Limit: feedBatch})
		if err != nil {
			return fmt.Errorf("reading the event log: %w", err)
		}
		for _, ev := range evs {
			if ev.Kind == tine.EventForkRunEnd && !f.ended(ev, m) {
				return nil
			}
			f.after = ev.Seq
		}
		if len(evs) < feedBatch {
			return nil
		}
	}
}

// ended observes the fork-run that event ev ended; it reports false, having
// observed nothing, when the group's report is not final yet.
func (f *forkRunFeed) ended(ev *tine.Event, m *Metrics) bool {
	var d struct {
		Group   string `json:"group"`
		Outcome string `json:"outcome"`
	}
	json.Unmarshal(ev.Detail, &d)
	rep, err := forkrun.Load(f.e, ev.Workspace, d.Group)
	if err == nil && rep.FinishedAt.IsZero() && time.Since(ev.Time) < reportGrace {
		return false
	}
	if err != nil { // the report is gone or unreadable: only the outcome is known
		m.forkRuns.WithLabelValues("unknown", bounded(d.Outcome, outcomes)).Inc()
		return true
	}
	m.observeForkRun(rep, d.Outcome)
	return true
}

// observeForkRun observes a fork-run's report: its outcome, its verdict
// and each fork's agent.
func (m *Metrics) observeForkRun(rep *forkrun.Report, outcome string) {
	agent := bounded(rep.Agent, agentKinds)
	m.forkRuns.WithLabelValues(agent, bounded(outcome, outcomes)).Inc()
	switch {
	case rep.Verdict != nil && rep.Verdict.Winner != "":
		m.ObserveVerdict(bounded(rep.Verdict.Judge, judgeKinds), VerdictWinner)
	case rep.Verdict != nil:
		m.ObserveVerdict(bounded(rep.Verdict.Judge, judgeKinds), VerdictNoWinner)
	case rep.JudgeError != "":
		m.ObserveVerdict(bounded(rep.JudgeKind, judgeKinds), VerdictError)
	}
	for _, fk := range rep.Forks {
		if wall, ok := agentWall(fk); ok {
			m.ObserveAgent(agent, wall, agentSpend(fk))
		}
	}
}

// agentWall is how long a fork's agent ran: from its own evidence, or else
// the fork's times; false when it never started or has no end.
func agentWall(f *forkrun.Fork) (time.Duration, bool) {
	a := f.Agent
	switch {
	case !a.StartedAt.IsZero() && !a.FinishedAt.IsZero():
		return a.FinishedAt.Sub(a.StartedAt), true
	case !f.StartedAt.IsZero() && !f.FinishedAt.IsZero():
		return f.FinishedAt.Sub(f.StartedAt), true
	}
	return 0, false
}

// agentSpend is what the budget pool counted for a fork, or -1 when its
// agent reported no cost at all (a command agent that prints none).
func agentSpend(f *forkrun.Fork) float64 {
	if f.CostUSD > 0 || f.Agent.CostUSD > 0 || f.Agent.CostFinal {
		return f.CostUSD
	}
	return -1
}

// bounded is v when it is one of allowed, else "other".
func bounded(v string, allowed []string) string {
	if slices.Contains(allowed, v) {
		return v
	}
	return "other"
}
