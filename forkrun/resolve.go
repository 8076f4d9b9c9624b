package forkrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/config"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/judge"
	"github.com/tinehq/tine/merge"
)

// ErrNoJudgeable means no fork finished: there is nothing to judge, and the
// forks are left for a person.
var ErrNoJudgeable = errors.New("no fork finished: nothing to judge")

// ErrNoWork means no fork did real work: every agent failed, was denied
// what it tried, or changed nothing. Nothing is judged; the forks are
// left for a person. It wraps ErrNoJudgeable.
var ErrNoWork = fmt.Errorf("no fork did real work: %w", ErrNoJudgeable)

// maxJudgeDiff bounds the patch of one fork read for an LLM judge.
const maxJudgeDiff = 256 << 10

// gather adds what each fork changed and whether its merge into the source
// is clean, and says which forks are ready.
func (r *runner) gather(ctx context.Context) error {
	c, err := r.e.Compare(ctx, r.rep.Group)
	if err != nil {
		return err
	}
	r.update(func() {
		for _, s := range c.Forks {
			fk, ok := r.forks[s.Run.ID]
			if !ok {
				continue
			}
			f := fk.f
			f.FilesChanged, f.LinesAdded, f.LinesDeleted = s.Changed, s.LinesAdded, s.LinesDeleted
			f.MergeClean, f.Conflicts = s.MergesCleanly, s.Conflicts
			f.Ready, f.NotReady = Readiness(f, s, r.o.Agent.Kind)
		}
	})
	return nil
}

// Readiness is tine's one readiness of a fork-run's fork f, whose work
// engine.Compare summarised as s: finished, its agent did its work (no
// error, no permission denied), its work holds real changes, its tests
// passed (or none configured), and it merges cleanly into the source.
// Every view that says "ready" of a fork-run's fork says this.
func Readiness(f *Fork, s engine.ForkSummary, kind agent.Kind) (bool, string) {
	switch {
	case f.State != Finished && f.Reason != "":
		return false, string(f.State) + ": " + f.Reason
	case f.State != Finished:
		return false, "not finished: " + string(f.State)
	case f.Agent.Problem(agent.HasResultLine(kind)) != "":
		return false, f.Agent.Problem(agent.HasResultLine(kind))
	case s.Changed == 0:
		return false, NoChanges
	case f.Test != nil && !f.Test.Passed:
		return false, "tests " + TestWord(f.Test)
	case !s.Ready:
		return false, s.NotReady
	}
	return true, ""
}

// NoChanges is the reason a fork whose work holds no change is not ready.
const NoChanges = engine.NoChanges

// didWork reports whether f's agent did real work: it finished without
// an error or a permission denied, and changed something.
func didWork(f *Fork, kind agent.Kind) bool {
	return f.State == Finished && f.FilesChanged > 0 && f.Agent.Problem(agent.HasResultLine(kind)) == ""
}

// noWork says, when no fork did real work, why each did not; "" when one
// did.
func (r *runner) noWork() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var whys []string
	for _, f := range r.rep.Forks {
		if didWork(f, r.o.Agent.Kind) {
			return ""
		}
		why := f.NotReady
		if why == "" {
			why = string(f.State)
		}
		whys = append(whys, f.Name+": "+why)
	}
	return strings.Join(whys, "; ")
}

// candidates are the judgeable forks as the judge sees them.
func (r *runner) candidates(ctx context.Context) []judge.Candidate {
	r.mu.Lock()
	forks := r.rep.clone().Forks
	r.mu.Unlock()
	var cs []judge.Candidate
	for _, f := range forks {
		if !f.State.Judgeable() {
			continue
		}
		c := CandidateOf(f)
		if config.JudgeUsesModel(r.o.JudgeKind) {
			c.Diff = r.patch(ctx, f.Run)
		}
		cs = append(cs, c)
	}
	return cs
}

// CandidateOf is fork f as a judge sees it, without its diff.
func CandidateOf(f *Fork) judge.Candidate {
	c := judge.Candidate{Run: f.Run, Name: f.Name, Approach: f.Approach, AgentExit: f.Agent.ExitCode,
		AgentResult: f.Agent.Result, Output: f.Agent.Output, FilesChanged: f.FilesChanged,
		LinesAdded: f.LinesAdded, LinesDeleted: f.LinesDeleted, MergeClean: f.MergeClean, CostUSD: f.CostUSD,
		NotReady: f.NotReady, PermissionDenials: f.Agent.DenialsTotal, Evidence: f.Evidence}
	if f.Test != nil {
		c.Tested, c.TestsPassed, c.TestTimedOut, c.TestOutput = true, f.Test.Passed, f.Test.TimedOut, f.Test.Output
	}
	return c
}

// patch returns fork run's unified diff, at most maxJudgeDiff bytes.
func (r *runner) patch(ctx context.Context, run string) string {
	ref, err := r.e.FindRun(ctx, run)
	if err != nil {
		return ""
	}
	var b bytes.Buffer
	r.e.Patch(ctx, ref, &capped{&b, maxJudgeDiff})
	return b.String()
}

// capped writes at most n bytes to w and drops the rest.
type capped struct {
	w *bytes.Buffer
	n int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.n - c.w.Len(); room > 0 {
		c.w.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// resolve judges the finished forks and resolves the group by the merge
// mode.
func (r *runner) resolve(ctx context.Context) error {
	cands := r.candidates(ctx)
	if len(cands) == 0 {
		r.update(func() {
			r.rep.Outcome = OutcomeNoWinner
			r.rep.OutcomeDetail = "no fork finished, so none was judged; " + r.keptNote()
		})
		return ErrNoJudgeable
	}
	if why := r.noWork(); why != "" {
		r.update(func() {
			r.rep.Outcome = OutcomeNoWinner
			r.rep.OutcomeDetail = "no fork did real work, so none was judged (" + why + "); " + r.keptNote()
		})
		return ErrNoWork
	}
	var v *judge.Verdict
	var err error
	j := r.workspaceJudge()
	if r.o.Mode == VoteMode {
		v, err = judge.Vote(ctx, j, 3, r.o.Prompt, cands)
	} else {
		v, err = j.Judge(ctx, r.o.Prompt, cands)
	}
	if err != nil {
		r.update(func() {
			r.rep.JudgeError = err.Error()
			r.rep.Outcome = OutcomeNoWinner
			r.rep.OutcomeDetail = "the judge failed: " + err.Error() + "; the forks are kept for tine choose"
		})
		return fmt.Errorf("judge: %w", err)
	}
	winner := r.forkByID(v.Winner)
	r.update(func() {
		r.rep.Verdict = v
		if winner != nil {
			r.rep.Winner = winner.Name
		}
	})
	r.event(tine.EventForkRunVerdict, map[string]any{"group": r.rep.Group, "judge": v.Judge, "winner": r.rep.Winner, "confidence": v.Confidence})
	switch {
	case winner == nil:
		r.setOutcome(OutcomeNoWinner, "the judge named no winner: "+v.Rationale)
	case r.o.Mode == Manual:
		r.setOutcome(OutcomeReported, fmt.Sprintf("manual mode: %s scored best (confidence %.2f); nothing was resolved", winner.Name, v.Confidence))
	case r.o.Mode == AutoWithFallback:
		r.setOutcome(OutcomeAwaitingChoice, fmt.Sprintf("%s is recommended (confidence %.2f); confirm with: tine choose %s %s --merge", winner.Name, v.Confidence, r.rep.Group, winner.Name))
	case !v.Clears(r.o.Threshold):
		r.setOutcome(OutcomeAwaitingChoice, fmt.Sprintf("%s scored best but the confidence %.2f is below the threshold %.2f, so nothing was merged; choose with: tine choose %s %s --merge",
			winner.Name, v.Confidence, r.o.Threshold, r.rep.Group, winner.Name))
	case len(winner.Conflicts) > 0:
		r.update(func() { r.rep.Conflicts = winner.Conflicts })
		r.setOutcome(OutcomeConflict, fmt.Sprintf("%s was picked, but merging it into %s conflicts on %d path(s) (%s changed them meanwhile); nothing was written and every fork is kept",
			winner.Name, r.rep.Source, len(winner.Conflicts), r.rep.Source))
	case !winner.Ready:
		r.setOutcome(OutcomeAwaitingChoice, fmt.Sprintf("%s was picked but is not ready (%s), so nothing was merged", winner.Name, winner.NotReady))
	default:
		return r.merge(ctx, winner)
	}
	return nil
}

// merge merges the winner into the source through the engine's merge and
// discards the other forks; a conflict is an outcome, not an error.
func (r *runner) merge(ctx context.Context, winner *Fork) error {
	res, err := r.e.Choose(ctx, r.rep.Group, winner.Run, engine.ChooseOptions{})
	var discarded []string
	if res != nil {
		for _, d := range res.Discarded {
			discarded = append(discarded, d.Name)
		}
	}
	if errors.Is(err, merge.ErrConflict) {
		var paths []string
		if res != nil && res.Merge != nil && res.Merge.Plan != nil {
			for _, c := range res.Merge.Plan.Conflicts() {
				paths = append(paths, c.Path)
			}
		}
		r.update(func() { r.rep.Conflicts = paths })
		what := fmt.Sprintf("conflicts on %d path(s)", len(paths))
		if len(paths) == 0 { // the files merge, the commits do not: the error says which
			what = "conflicts: " + err.Error()
		}
		r.setOutcome(OutcomeConflict, fmt.Sprintf("merging %s into %s %s; nothing was written and every fork is kept", winner.Name, r.rep.Source, what))
		return nil
	}
	if err != nil {
		return fmt.Errorf("merging %s: %w", winner.Name, err)
	}
	r.update(func() { r.rep.Discarded = discarded })
	r.setOutcome(OutcomeMerged, fmt.Sprintf("%s was merged into %s; %d other fork(s) discarded", winner.Name, r.rep.Source, len(discarded)))
	return nil
}

func (r *runner) setOutcome(o, detail string) {
	r.update(func() { r.rep.Outcome, r.rep.OutcomeDetail = o, detail })
}

func (r *runner) forkByID(id string) *Fork {
	r.mu.Lock()
	defer r.mu.Unlock()
	if fk, ok := r.forks[id]; ok {
		c := *fk.f
		return &c
	}
	return nil
}

// workspaceJudge is the run's judge; the heuristic, when given no weights,
// weighs with the workspace's learned ones (engine.JudgeWeights), the
// built-in ones when none were learned.
func (r *runner) workspaceJudge() judge.Judge {
	h, ok := r.o.Judge.(judge.Heuristic)
	if !ok || h.Weights != nil {
		return r.o.Judge
	}
	h.Weights, _ = r.e.JudgeWeights(r.rep.Workspace)
	return h
}

// keptNote says what is left of the forks to inspect and resolve: all of
// them, or, when some were discarded (or merged) by someone else while the
// fork-run ran, which ones are gone and which are kept.
func (r *runner) keptNote() string {
	const next = "inspect them with tine summary, resolve them with tine choose or tine discard"
	var kept, gone []string
	for _, f := range r.rep.Forks { // the slice and the names do not change once made
		ref, err := r.e.FindRun(context.Background(), f.Run)
		if err == nil && !ref.Run.Active() {
			gone = append(gone, fmt.Sprintf("%s was %s", f.Name, ref.Run.State))
			continue
		}
		kept = append(kept, f.Name)
	}
	switch {
	case len(gone) == 0:
		return "the forks are kept: " + next
	case len(kept) == 0:
		return strings.Join(gone, ", ") + " while the fork-run ran: no fork is left to resolve"
	}
	return fmt.Sprintf("%s while the fork-run ran; %s kept: %s", strings.Join(gone, ", "), strings.Join(kept, ", "), next)
}
