package plan

import (
	"errors"

	"github.com/tinehq/tine/layer"
)

// ErrConflict means a plan has conflicts and cannot be applied, or commits
// cannot be replayed onto a target.
var ErrConflict = errors.New("merge conflict")

// Action is what a plan does with one path of the target.
type Action string

// Actions of a plan entry.
const (
	// Take makes the target's path what the run has (writing it, or
	// deleting it when the run deleted it).
	Take Action = "take"
	// Converged means the target already has what the run has: nothing to do.
	Converged Action = "converged"
	// TextMerged means both sides changed a text file and a line-wise
	// (diff3) merge without overlap produced the content to write.
	TextMerged Action = "text_merged"
	// Conflict means both sides changed the path differently; a plan with a
	// conflict is never applied.
	Conflict Action = "conflict"
)

// Entry is one path of a plan.
type Entry struct {
	Path   string     `json:"path"`   // slash-separated, relative to the workspace
	Action Action     `json:"action"` // take, converged, text_merged or conflict
	Change layer.Kind `json:"change"` // what the run did to the path since the fork point
	Type   string     `json:"type"`   // the path's type in the run ("file", "dir", "symlink", "other"), the old type when deleted
	Bytes  int64      `json:"bytes"`  // bytes written to the target (0 for deletions and no-ops)
	Reason string     `json:"reason,omitempty"`

	// Source is where the content to write is read from: a path in the
	// run's view, or a staged file (text merges, git patches). Empty for
	// deletions. Mode and, for symlinks, the target come from Source too.
	Source string `json:"-"`
	// SourceRoot, when set, is the run's view that Source lies beneath:
	// Apply then reads Source beneath it by descriptor, following no
	// symlink (fstree.Root), as the run may be changing its view while it
	// is merged. Empty for a Source of tine's own (a staged file).
	SourceRoot string `json:"-"`
}

// Plan is the full list of what a merge would do, sorted by path.
type Plan struct {
	Scope   string  `json:"scope"` // "git", "filesystem" or "paths"
	Entries []Entry `json:"entries"`
	// LeftOut are changes of the run the merge does not carry, sorted by
	// path: a repository's internals git runs things from (hooks, config),
	// which only a person's explicit choice carries.
	LeftOut []LeftOut `json:"left_out,omitempty"`
}

// LeftOut is a change of the run a plan leaves out, and why.
type LeftOut struct {
	Path   string     `json:"path"`   // slash-separated, relative to the workspace
	Change layer.Kind `json:"change"` // what the run did to the path since the fork point
	Type   string     `json:"type"`   // as Entry.Type
	Reason string     `json:"reason"`
}

// Conflicts returns the entries in conflict.
func (p *Plan) Conflicts() []Entry {
	var out []Entry
	for _, e := range p.Entries {
		if e.Action == Conflict {
			out = append(out, e)
		}
	}
	return out
}

// Clean reports whether the plan has no conflict.
func (p *Plan) Clean() bool { return len(p.Conflicts()) == 0 }
