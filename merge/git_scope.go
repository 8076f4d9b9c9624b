package merge

import (
	"context"
	"fmt"

	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/merge/internal/gitscope"
	"github.com/tinehq/tine/merge/internal/plan"
)

// GitOptions says what a git-scope merge compares.
type GitOptions struct {
	Theirs string // the run's work tree
	Base   string // the fork point's files (the version the run was forked from)
	Head   string // the fork point's commit, HEAD of the run's repository then
	Ours   string // the target's work tree
	// Changed lists the paths where Theirs differs from Base (the run's
	// layer changes); only these are staged and compared, so the plan costs
	// what the run changed, not what the workspace holds.
	Changed []string
	// Scratch is an existing empty directory for the plan's staged content;
	// it must outlive the plan's Apply.
	Scratch string
	// TextMerge retries a text file the patch cannot apply to line-wise
	// (diff3 of the fork point's, the run's and the target's versions), as
	// the filesystem scope does.
	TextMerge bool
}

// PlanGit plans a git-scope merge: the binary patch from the fork point's
// files to the run's work tree as git sees them — commits made since,
// staged and unstaged changes, deletions, untracked (not ignored) files,
// renames, mode changes, symlinks, binary files — checked against the
// target's working tree. The base is the fork point's files, not its
// commit, so work the source had not committed when it was forked is not
// taken for the run's. The content each entry writes is staged under
// o.Scratch; paths the patch cannot apply to are conflicts, each with git's
// reason.
//
// Neither Theirs nor Ours is written. A rename is planned as the deletion of
// its old path and the addition of its new one. A directory the run created
// that the target lacks is planned as an added directory (with the run's
// mode); a directory the run removed that the plan leaves empty in the
// target is deleted, as git does. A path where Ours already has exactly what
// Theirs has is converged rather than in conflict. A submodule or nested
// repository is a conflict: git scope cannot merge it. When Theirs is not
// the top of a git work tree or Head is not a commit there, PlanGit returns
// an error wrapping tine.ErrInvalid.
func PlanGit(ctx context.Context, o GitOptions) (*Plan, error) {
	p, err := gitscope.Plan(ctx, gitscope.Options{Theirs: o.Theirs, Base: o.Base, Head: o.Head, Ours: o.Ours,
		Changed: o.Changed, Scratch: o.Scratch})
	if err != nil || !o.TextMerge {
		return p, err
	}
	if p.Entries, err = textMerges(ctx, p.Entries, o); err != nil {
		return nil, err
	}
	return p, nil
}

// textMerges retries each conflict on a file that the fork point, the run
// and the target all have as a regular file line-wise, with the filesystem
// scope's text merge; an entry that merges cleanly becomes text_merged.
func textMerges(ctx context.Context, entries []Entry, o GitOptions) ([]Entry, error) {
	p := &fsPlanner{ctx: ctx, opt: PlanOptions{TextMerge: true, Scratch: o.Scratch},
		base: plan.NewView(o.Base), theirs: plan.NewView(o.Theirs), ours: plan.NewView(o.Ours),
		byPath: map[string]*Entry{}}
	for i, e := range entries {
		if e.Action != Conflict || e.Type != "file" || e.Change != layer.Modified {
			continue
		}
		s, err := p.look(e.Path)
		if err != nil {
			return nil, fmt.Errorf("merge: text merge %s: %w", e.Path, err)
		}
		if !isRegular(s.base) || !isRegular(s.theirs) || !isRegular(s.ours) {
			continue
		}
		merged, err := p.textMerge(e, s)
		if err != nil {
			return nil, err
		}
		if merged.Action == TextMerged {
			merged.Reason = ""
			entries[i] = merged
		}
	}
	return entries, nil
}

// Commits is what carrying a run's commits into a target's history does:
// the commits the run made since the fork point, replayed onto the
// target's HEAD (or fast-forwarded to), with their messages and authors.
type Commits = gitscope.Commits

// PlanCommits prepares carrying the commits run theirs made after forkHead
// onto the HEAD of the repository at ours: their objects are fetched into
// ours and, when ours' HEAD has moved on from forkHead, each commit is
// replayed onto it three-way, in order, with its message and author (a
// temporary index goes under scratch, an existing directory). Nothing of
// ours but its object store is written; LandCommits moves its HEAD. It
// returns nil when the run made no commits. A merge commit, a history of
// ours that no longer contains forkHead, or a commit that does not apply
// cleanly on ours' HEAD is refused with an error wrapping ErrConflict that
// says which.
func PlanCommits(ctx context.Context, theirs, forkHead, ours, scratch string) (*Commits, error) {
	return gitscope.PlanCommits(ctx, theirs, forkHead, ours, scratch)
}

// LandCommits moves the HEAD of the repository at ours from c.Target to
// c.Head (refusing if it moved meanwhile) and brings the index entries of
// the paths the commits change in line with it, leaving the work tree —
// which the file merge wrote — and every other index entry alone.
func LandCommits(ctx context.Context, ours string, c *Commits) error {
	return gitscope.LandCommits(ctx, ours, c)
}
