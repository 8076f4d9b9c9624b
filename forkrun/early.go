package forkrun

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/evidence"
	"github.com/tinehq/tine/judge"
)

// EarlyStop is what --stop-when-confident did: the fork that made the
// rest unnecessary, the confidence it cleared, the forks stopped, and the
// budget that saved.
type EarlyStop struct {
	Fork       string    `json:"fork"` // by name
	Confidence float64   `json:"confidence"`
	At         time.Time `json:"at"`
	Stopped    []string  `json:"stopped"` // by name; their changes are kept
	// SpentUSD is what the stopped forks had cost when stopped, and
	// SavedUSD an estimate of what they would have cost more: per fork,
	// the confident fork's own cost less what the stopped one had spent
	// (at least 0). SavedSeconds is the agent time they would have had
	// left by the same reckoning.
	SpentUSD     float64 `json:"spent_usd"`
	SavedUSD     float64 `json:"saved_usd"`
	SavedSeconds float64 `json:"saved_seconds"`
}

// earlyEvidence is what a finished fork needs, beyond its test command,
// for --stop-when-confident: the holdout and regression commands run in
// it at once.
func (r *runner) earlyEvidence(ctx context.Context, f *Fork) *evidence.Fork {
	ev := &evidence.Fork{}
	if r.o.Holdout != "" {
		if ref, err := r.e.FindRun(ctx, f.Run); err != nil {
			ev.Holdout = &evidence.Check{Command: r.o.Holdout, Error: err.Error()}
		} else {
			ev.Holdout = r.holdout(ctx, ref)
		}
	}
	if r.o.Regression != "" {
		ev.Regression = r.check(ctx, f.Run, "", r.o.Regression)
	}
	return ev
}

// stopIfConfident is called when fork fk finished: if the fork is ready
// by what can be known now, and the judge's confidence in it against
// every fork still running at its best clears the threshold, the forks
// still running or waiting are stopped (their changes kept) and the
// saving recorded.
//
// A running fork's best possible outcome is a fork at least as good as
// fk: the heuristic's separation from it is 0, and what is left is fk's
// own evidence (its absolute evidence: its tests, holdout and regression
// commands passed, it changed something, its agent succeeded), as with a
// corroborated winner: a rival as good leaves open which good fork to
// take, not whether fk is good. So the confidence is the heuristic's for
// fk alone, with its holdout and regression run now (Options.check
// requires one of them: visible tests alone may be a lucky pass).
func (r *runner) stopIfConfident(ctx context.Context, fk *forkRun) {
	if !r.o.StopWhenConfident || ctx.Err() != nil {
		return
	}
	r.mu.Lock()
	f := fk.f
	done := r.early != nil || f.State != Finished || (r.o.Test != "" && (f.Test == nil || !f.Test.Passed))
	c := CandidateOf(f)
	r.mu.Unlock()
	if done || r.patch(ctx, f.Run) == "" {
		return
	}
	c.FilesChanged, c.MergeClean = max(c.FilesChanged, 1), true // checked again when resolved
	c.Evidence = r.earlyEvidence(ctx, f)
	v, err := judge.Heuristic{}.Judge(ctx, r.o.Prompt, []judge.Candidate{c})
	if err != nil || !v.Clears(r.o.Threshold) {
		return
	}
	r.mu.Lock()
	if r.early != nil {
		r.mu.Unlock()
		return
	}
	r.early = &EarlyStop{Fork: f.Name, Confidence: v.Confidence, At: time.Now().UTC()}
	var victims []*forkRun
	for _, g := range r.rep.Forks {
		if g.State == Pending || g.State == Running {
			victims = append(victims, r.forks[g.Run])
			r.early.Stopped = append(r.early.Stopped, g.Name)
		}
	}
	r.mu.Unlock()
	why := fmt.Sprintf("stopped early: %s finished with confidence %.2f (threshold %.2f), which no outcome of this fork could lower; its changes are kept",
		f.Name, v.Confidence, r.o.Threshold)
	for _, g := range victims {
		g.stop(StoppedEarly, why)
	}
	r.event(tine.EventForkRunStopEarly, map[string]any{"group": r.rep.Group, "fork": f.Name, "confidence": v.Confidence, "stopped": r.early.Stopped})
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// settleEarly fills in what the early stop saved, once every fork ended.
func (r *runner) settleEarly() {
	r.update(func() {
		e := r.early
		if e == nil {
			return
		}
		var winner *Fork
		stopped := map[string]bool{}
		for _, n := range e.Stopped {
			stopped[n] = true
		}
		for _, f := range r.rep.Forks {
			if f.Name == e.Fork {
				winner = f
			}
		}
		for _, f := range r.rep.Forks {
			if !stopped[f.Name] {
				continue
			}
			spent := r.pool.SpentBy(f.Run)
			e.SpentUSD += spent
			if winner != nil {
				e.SavedUSD += max(0, winner.Agent.CostUSD-spent)
				e.SavedSeconds += max(0, float64(winner.Agent.WallMS-f.Agent.WallMS)/1000)
			}
		}
		e.SpentUSD, e.SavedUSD, e.SavedSeconds = round6(e.SpentUSD), round6(e.SavedUSD), math.Round(e.SavedSeconds*10)/10
		r.rep.EarlyStop = e
	})
}

// stoppedEarly reports whether --stop-when-confident stopped the run's
// remaining forks.
func (r *runner) stoppedEarly() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.early != nil
}
