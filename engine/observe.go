package engine

import "time"

// Outcomes of a merge, as an Observer is told them.
const (
	OutcomeMerged   = "merged"   // the plan was applied and the run marked merged
	OutcomeConflict = "conflict" // the plan had conflicts; nothing was written
	OutcomeFailed   = "failed"   // planning or applying failed; the target is unchanged
	OutcomeDryRun   = "dry_run"  // a clean plan, not applied because it was asked for a dry run
)

// Observer is told of the operations the engine carries out, so that a
// caller can count and time them (package metrics does, for Prometheus).
//
// The engine calls it synchronously at the end of an operation, once the
// store has recorded it, possibly while the workspace is still locked: an
// Observer must return quickly and must not call back into the engine. It
// may be called from several goroutines at once. Every string it is given
// comes from a small fixed set (a backend, a live mode, an outcome, an
// action), never a run's id or name.
type Observer interface {
	// Forked is told that one fork made copies forks with the workspace's
	// backend and the live mode (none, rerun, ptrace or criu) it resolved
	// to, taking d in all, processes started included.
	Forked(backend, live string, copies int, d time.Duration)
	// Merged is told of each merge that got as far as planning: its
	// outcome (one of the Outcome constants), the time the plan took and
	// the time applying it took (zero when it was not applied).
	Merged(outcome string, plan, apply time.Duration)
	// Promoted is told that a fork became its workspace's source, the old
	// source retiring.
	Promoted()
	// Discarded is told that one discard ended n runs.
	Discarded(n int)
	// RolledBack is told that a run's files were replaced by a version's.
	RolledBack()
	// Approved is told that a person's approval of a pending resolution
	// was consumed, just before its action (merge, promote, discard or
	// choose) runs.
	Approved(action string)
}

// NopObserver is an Observer that ignores what it is told; it is an
// engine's observer until SetObserver gives it another.
type NopObserver struct{}

// Forked does nothing.
func (NopObserver) Forked(backend, live string, copies int, d time.Duration) {}

// Merged does nothing.
func (NopObserver) Merged(outcome string, plan, apply time.Duration) {}

// Promoted does nothing.
func (NopObserver) Promoted() {}

// Discarded does nothing.
func (NopObserver) Discarded(n int) {}

// RolledBack does nothing.
func (NopObserver) RolledBack() {}

// Approved does nothing.
func (NopObserver) Approved(action string) {}

var _ Observer = NopObserver{}

// SetObserver makes o the observer of e's operations; nil restores the
// NopObserver. Call it before e is shared between goroutines.
func (e *Engine) SetObserver(o Observer) {
	if o == nil {
		o = NopObserver{}
	}
	e.obs = o
}

// Observer returns the observer of e's operations, which the control
// plane tells of the approvals it carries out.
func (e *Engine) Observer() Observer { return e.obs }

// mergeClock times the two phases of a merge for the observer.
type mergeClock struct {
	t           time.Time
	plan, apply time.Duration
}

func startMerge() *mergeClock   { return &mergeClock{t: time.Now()} }
func (c *mergeClock) planned()  { c.plan = time.Since(c.t) }
func (c *mergeClock) applying() { c.t = time.Now() }
func (c *mergeClock) applied()  { c.apply = time.Since(c.t) }
func (c *mergeClock) done(o Observer, res *MergeResult, err error) {
	o.Merged(mergeOutcome(res, err), c.plan, c.apply)
}

// mergeOutcome names what became of a merge that was planned, or whose
// planning failed.
func mergeOutcome(res *MergeResult, err error) string {
	switch {
	case res != nil && res.Plan != nil && !res.Plan.Clean():
		return OutcomeConflict
	case err != nil || res == nil:
		return OutcomeFailed
	case res.Applied:
		return OutcomeMerged
	}
	return OutcomeDryRun
}
