package gitscope

import (
	"context"
	"slices"
	"sort"

	"github.com/tinehq/tine/internal/gitcmd"
	"github.com/tinehq/tine/merge/internal/plan"
)

// workspaceSpecs limits every git command to the workspace minus tine's
// own files (anything named .tine-* at the root, and what is below it).
var workspaceSpecs = []string{"--", ".", ":(exclude,top,glob).tine-*", ":(exclude,top,glob).tine-*/**"}

// planConfig, after gitcmd's configuration, keeps git from writing
// anything of a repository but our temporary index, and makes its output
// stable to parse.
var planConfig = []string{
	"-c", "core.quotePath=false",
	"-c", "core.splitIndex=false",
	"-c", "advice.addEmbeddedRepo=false",
	"-c", "apply.ignoreWhitespace=no",
}

// scratchConfig is added for the plan's commands, whose objects go to a
// private directory thrown away after the plan: stored uncompressed, never
// synced. Commands that write a user's repository (--commits) do without.
var scratchConfig = []string{"-c", "core.looseCompression=0", "-c", "core.fsync=none"}

// Git modes as they appear in a raw diff.
const (
	modeFile    = 0o100644
	modeExec    = 0o100755
	modeSymlink = 0o120000
	modeLink    = 0o160000 // a submodule or nested repository
)

// Options says what a git-scope merge compares.
type Options struct {
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
}

// Plan plans a git-scope merge: the binary patch from the fork point's
// files to the run's work tree as git sees them — commits made since,
// staged and unstaged changes, deletions, untracked (not ignored) files,
// renames, mode changes, symlinks, binary files — checked against the
// target's working tree. The base is the fork point's files, not its
// commit, so work the source had not committed when it was forked is not
// taken for the run's. The content each entry writes is staged under
// o.Scratch; paths the patch cannot apply to are conflicts, each with git's
// reason. The entries are sorted by path.
//
// Neither Theirs nor Ours is written. A rename is planned as the deletion of
// its old path and the addition of its new one. A directory the run created
// that the target lacks is planned as an added directory (with the run's
// mode); a directory the run removed that the plan leaves empty in the
// target is deleted, as git does. A path where Ours already has exactly what
// Theirs has is converged rather than in conflict. A submodule or nested
// repository is a conflict: git scope cannot merge it. When Theirs is not
// the top of a git work tree or Head is not a commit there, Plan returns
// an error wrapping tine.ErrInvalid.
func Plan(ctx context.Context, o Options) (*plan.Plan, error) {
	g, err := open(ctx, o.Theirs, o.Head, o.Scratch)
	if err != nil {
		return nil, err
	}
	changes, err := g.changes(ctx, o.Base, o.Ours, o.Changed)
	if err != nil {
		return nil, err
	}
	p := &plan.Plan{Scope: "git", Entries: []plan.Entry{}}
	if len(changes) == 0 {
		return p, nil
	}
	m, err := newMerger(g, o.Base, o.Ours, changes)
	if err != nil {
		return nil, err
	}
	if p.Entries, err = m.plan(ctx); err != nil {
		return nil, err
	}
	if p.Entries, err = m.directories(p.Entries); err != nil {
		return nil, err
	}
	sort.SliceStable(p.Entries, func(i, j int) bool { return p.Entries[i].Path < p.Entries[j].Path })
	return p, nil
}

// run runs git with args in dir, for a plan, and returns its standard
// output.
func run(ctx context.Context, dir string, env []string, stdin []byte, args ...string) ([]byte, error) {
	return runWith(ctx, scratchConfig, dir, env, stdin, args...)
}

// runWith is run with extra configuration instead of the plan's.
func runWith(ctx context.Context, extra []string, dir string, env []string, stdin []byte, args ...string) ([]byte, error) {
	return gitcmd.Run(ctx, dir, env, slices.Concat(planConfig, extra), stdin, args...)
}
