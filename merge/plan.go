package merge

import "github.com/tinehq/tine/merge/internal/plan"

// The plan's types are defined in merge/internal/plan, which both scopes
// (the filesystem scope here, the git scope in merge/internal/gitscope)
// build plans with; these are the names callers use.

// Action is what a plan does with one path of the target: Take, Converged,
// TextMerged or Conflict.
type Action = plan.Action

// Actions of a plan entry.
const (
	// Take makes the target's path what the run has (writing it, or
	// deleting it when the run deleted it).
	Take = plan.Take
	// Converged means the target already has what the run has: nothing to do.
	Converged = plan.Converged
	// TextMerged means both sides changed a text file and a line-wise
	// (diff3) merge without overlap produced the content to write.
	TextMerged = plan.TextMerged
	// Conflict means both sides changed the path differently; a plan with a
	// conflict is never applied.
	Conflict = plan.Conflict
)

// Entry is one path of a plan: its path, action, the run's change, type,
// the bytes it writes, a conflict's reason, and the Source its content is
// read from.
type Entry = plan.Entry

// Plan is the full list of what a merge would do, sorted by path, with its
// scope ("git", "filesystem" or "paths").
type Plan = plan.Plan

// LeftOut is a change of the run a plan does not carry, with the reason.
type LeftOut = plan.LeftOut

// ErrConflict means a plan has conflicts and cannot be applied, or a run's
// commits cannot be replayed onto the target.
var ErrConflict = plan.ErrConflict
