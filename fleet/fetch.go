package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/gitcmd"
	"github.com/tinehq/tine/merge"
)

// Fetched is what Fetch made of a task's winner.
type Fetched struct {
	Fork *tine.Run `json:"fork"`
	// Commits are the winner's commits as the fork now has them, oldest
	// first: the winner's own (fast-forward) or replayed onto the fork's
	// HEAD; none when the winner made none or they were not carried.
	Commits  []string `json:"commits,omitempty"`
	Replayed bool     `json:"replayed,omitempty"` // replayed onto a HEAD that moved on from the task's commit
	Notes    []string `json:"notes,omitempty"`    // what the developer should know (a moved HEAD, commits not carried)
}

// Fetch forks run ref into a fork named after task t and brings t's
// winner there: its files (patch, from the task's commit to the winner's
// work tree) and, when its repository has the task's commit, its commits
// (bundle) with their messages, authors and order, so tine merge lands
// them as a local fork's. Without the task's commit the commits cannot be
// replayed: the files come alone, and a note says so. A patch or commit
// that does not apply is a conflict (merge.ErrConflict) and leaves no
// fork behind. Files are written as the workspace's owner.
func Fetch(ctx context.Context, e *engine.Engine, ref string, t *Task, patch, bundle []byte) (_ *Fetched, err error) {
	res, err := e.Fork(ctx, ref, engine.ForkOptions{Copies: 1, Name: t.ID, Live: "none"})
	if err != nil {
		return nil, err
	}
	fk := res.Forks[0]
	defer func() {
		if err != nil {
			if _, derr := e.Discard(context.WithoutCancel(ctx), fk.ID, true); derr != nil {
				err = fmt.Errorf("%w (and discarding fork %s: %v)", err, fk.Name, derr)
			}
		}
	}()
	r, err := e.FindRun(ctx, fk.ID)
	if err != nil {
		return nil, err
	}
	out := &Fetched{Fork: fk}
	dir := e.Path(r.Workspace, fk)
	if fk.GitHead != "" && fk.GitHead != t.Commit {
		out.Notes = append(out.Notes, fmt.Sprintf("%s is at commit %.12s, task %s started from %.12s: the winner's work is put on top of it", res.Parent.Name, fk.GitHead, t.ID, t.Commit))
	}
	carry := bundle != nil && hasCommit(ctx, dir, t.Commit)
	if bundle != nil && !carry {
		out.Notes = append(out.Notes, fmt.Sprintf("%s's repository does not have commit %.12s, which task %s started from: the winner's %d commit(s) are not replayed; its files come as one patch",
			res.Parent.Name, t.Commit, t.ID, len(t.Commits)))
	}
	if err := applyPatch(ctx, r, dir, patch); err != nil {
		return nil, fmt.Errorf("task %s's patch does not apply to %s: %s: %w", t.ID, res.Parent.Name, gitReason(err), merge.ErrConflict)
	}
	if carry {
		c, err := carryCommits(ctx, e, r, t, bundle)
		if err != nil {
			return nil, fmt.Errorf("task %s's commits: %w", t.ID, err)
		}
		if c != nil {
			out.Commits, out.Replayed = c.Carried, !c.FastForward
		}
	}
	return out, nil
}

// hasCommit reports whether the repository at dir has commit id.
func hasCommit(ctx context.Context, dir, id string) bool {
	_, err := gitcmd.Run(ctx, dir, nil, nil, nil, "cat-file", "-e", id+"^{commit}")
	return err == nil
}

// applyPatch applies patch to the work tree at dir, run r's, and gives
// what it wrote to r's workspace's owner (git runs as this process: the
// owner may not enter the state directory the view lives in).
func applyPatch(ctx context.Context, r engine.Ref, dir string, patch []byte) error {
	drivers, err := gitcmd.Drivers(ctx, dir)
	if err != nil {
		return err
	}
	list, err := gitcmd.Run(ctx, dir, nil, drivers, patch, "apply", "--numstat", "-z", "-")
	if err != nil {
		return err
	}
	if _, err := gitcmd.Run(ctx, dir, nil, drivers, patch, "apply", "--binary", "--whitespace=nowarn", "-"); err != nil {
		return err
	}
	return giveToOwner(r.Workspace, dir, patchPaths(list))
}

// patchPaths are the paths git apply --numstat -z names.
func patchPaths(numstat []byte) []string {
	var out []string
	for f := range strings.SplitSeq(strings.TrimSuffix(string(numstat), "\x00"), "\x00") {
		// "ADDED\tDELETED\tPATH"; renames are off (the patch has none)
		if _, p, ok := strings.Cut(f, "\t"); ok {
			if _, p, ok = strings.Cut(p, "\t"); ok && p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// giveToOwner gives w's owner each path under dir that exists, and the
// directories between it and dir that this process made (root's).
func giveToOwner(w *tine.Workspace, dir string, paths []string) error {
	if uid, _ := engine.OwnerIDs(w); uid < 0 {
		return nil
	}
	give := map[string]bool{}
	for _, p := range paths {
		full := filepath.Join(dir, p)
		if _, err := os.Lstat(full); err == nil {
			give[full] = true
		}
		for d := filepath.Dir(full); d != dir && strings.HasPrefix(d, dir+"/"); d = filepath.Dir(d) {
			if st, err := os.Lstat(d); err == nil && st.Sys().(*syscall.Stat_t).Uid == 0 {
				give[d] = true
			}
		}
	}
	var list []string
	for p := range give {
		list = append(list, p)
	}
	return engine.GiveToOwner(w, list...)
}

// carryCommits puts t's winner's commits (bundle) on the HEAD of fork
// r's repository, as tine merge carries a run's commits into its target:
// the fork's HEAD moves to them (fast-forward when it is at t's commit,
// else each replayed onto it), and the index entries of the paths they
// change follow; the work tree already has their files (applyPatch).
// The bundle is unpacked into a scratch repository that borrows the
// fork's objects (the commits need t's commit), and fetched from there.
func carryCommits(ctx context.Context, e *engine.Engine, r engine.Ref, t *Task, bundle []byte) (*merge.Commits, error) {
	dir := e.Path(r.Workspace, r.Run)
	scratch, err := os.MkdirTemp("", "tine-fetch-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	theirs, err := unbundle(ctx, dir, scratch, t.Head, bundle)
	if err != nil {
		return nil, err
	}
	defer e.GiveGitToOwner(r)
	c, err := merge.PlanCommits(ctx, theirs, t.Commit, dir, scratch)
	if err != nil {
		return nil, err
	}
	return c, merge.LandCommits(ctx, dir, c)
}

// unbundle makes a bare repository under scratch that borrows the objects
// of the repository at dir, unpacks bundle into it and points its HEAD at
// head; it returns its path.
func unbundle(ctx context.Context, dir, scratch, head string, bundle []byte) (string, error) {
	objects, err := gitcmd.Run(ctx, dir, nil, nil, nil, "rev-parse", "--path-format=absolute", "--git-path", "objects")
	if err != nil {
		return "", err
	}
	theirs := filepath.Join(scratch, "winner.git")
	if _, err := gitcmd.Run(ctx, scratch, nil, nil, nil, "init", "--quiet", "--bare", "--", theirs); err != nil {
		return "", err
	}
	alt := filepath.Join(theirs, "objects", "info", "alternates")
	if err := os.WriteFile(alt, []byte(strings.TrimSpace(string(objects))+"\n"), 0o600); err != nil {
		return "", err
	}
	file := filepath.Join(scratch, "commits.bundle")
	if err := os.WriteFile(file, bundle, 0o600); err != nil {
		return "", err
	}
	if _, err := gitcmd.Run(ctx, theirs, nil, nil, nil, "bundle", "unbundle", file); err != nil {
		return "", fmt.Errorf("unpack the winner's commits: %s: %w", gitReason(err), tine.ErrInvalid)
	}
	if _, err := gitcmd.Run(ctx, theirs, nil, nil, nil, "update-ref", "--no-deref", "HEAD", head); err != nil {
		return "", fmt.Errorf("the winner's HEAD %.12s: %s: %w", head, gitReason(err), tine.ErrInvalid)
	}
	return theirs, nil
}

// gitReason is the first line git printed on stderr for err, else err.
func gitReason(err error) string {
	var ge *gitcmd.Error
	if errors.As(err, &ge) && strings.TrimSpace(ge.Stderr) != "" {
		l, _, _ := strings.Cut(strings.TrimSpace(ge.Stderr), "\n")
		return l
	}
	return err.Error()
}
