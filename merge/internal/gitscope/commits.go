package gitscope

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/merge/internal/plan"
)

// Commits is what carrying a run's commits into a target's history does:
// the commits the run made since the fork point, replayed onto the
// target's HEAD (or fast-forwarded to, when the target's HEAD is still the
// fork point), with their messages and authors.
type Commits struct {
	Target      string   `json:"target"`       // the target's HEAD before
	Head        string   `json:"head"`         // the target's HEAD after
	Carried     []string `json:"carried"`      // the new commits on the target, oldest first
	FastForward bool     `json:"fast_forward"` // the run's commits themselves, unchanged
	Paths       []string `json:"-"`            // paths the commits change, whose index entries follow HEAD
}

// PlanCommits prepares carrying the commits run theirs made after forkHead
// onto the HEAD of the repository at ours: their objects are fetched into
// ours and, when ours' HEAD has moved on from forkHead, each commit is
// replayed onto it three-way, in order, with its message and author (a
// temporary index goes under scratch, an existing directory). Nothing of ours but its object
// store is written; LandCommits moves its HEAD. It returns nil when the
// run made no commits. A merge commit, a history of ours that no longer
// contains forkHead, or a commit that does not apply cleanly on ours' HEAD
// is refused with an error wrapping plan.ErrConflict that says which.
func PlanCommits(ctx context.Context, theirs, forkHead, ours, scratch string) (*Commits, error) {
	list, err := runCommits(ctx, theirs, forkHead)
	if err != nil || len(list) == 0 {
		return nil, err
	}
	oh, err := output(ctx, ours, nil, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return nil, fmt.Errorf("merge: commits: the target has no HEAD commit: %w", err)
	}
	oh = strings.TrimSpace(oh)
	// The local transport runs upload-pack without the command line's
	// configuration: it is given safe.directory itself, or a run's
	// repository owned by another user than tine's (a workspace's owner)
	// is refused as of dubious ownership.
	if _, err := output(ctx, ours, nil, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
		"--upload-pack=git -c safe.directory=* upload-pack", theirs, list[len(list)-1]); err != nil {
		return nil, fmt.Errorf("merge: commits: fetch the run's commits: %w", err)
	}
	c := &Commits{Target: oh}
	if oh == forkHead {
		c.Head, c.Carried, c.FastForward = list[len(list)-1], list, true
	} else if err := c.replay(ctx, ours, forkHead, scratch, list); err != nil {
		return nil, err
	}
	paths, err := output(ctx, ours, nil, "diff-tree", "-r", "-z", "--name-only", "--no-renames", oh, c.Head)
	if err != nil {
		return nil, fmt.Errorf("merge: commits: %w", err)
	}
	c.Paths = splitNul(paths)
	return c, nil
}

// runCommits lists the commits of theirs after forkHead, oldest first,
// refusing merge commits.
func runCommits(ctx context.Context, theirs, forkHead string) ([]string, error) {
	out, err := output(ctx, theirs, nil, "rev-list", "--reverse", "--parents", forkHead+"..HEAD")
	if err != nil {
		return nil, fmt.Errorf("merge: commits: list the run's commits since the fork point: %w", err)
	}
	var list []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) > 2 {
			return nil, fmt.Errorf("merge: commits: %s is a merge commit, which cannot be replayed: %w", short(f[0]), plan.ErrConflict)
		}
		list = append(list, f[0])
	}
	return list, nil
}

// replay makes, on top of c.Target, one commit per commit of list with the
// same changes, message and author: each commit's patch is applied
// three-way (git apply --cached --3way) to a temporary index under scratch
// holding the commit made before it, so no work tree is touched.
func (c *Commits) replay(ctx context.Context, ours, forkHead, scratch string, list []string) error {
	if _, err := output(ctx, ours, nil, "merge-base", "--is-ancestor", forkHead, c.Target); err != nil {
		return fmt.Errorf("merge: commits: the target's history no longer holds the fork point %s (rewritten since?): %w", short(forkHead), plan.ErrConflict)
	}
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(scratch, "commits-index")}
	cur := c.Target
	for _, id := range list {
		tree, err := replayTree(ctx, ours, env, cur, id)
		if err != nil {
			return err
		}
		if cur, err = commitLike(ctx, ours, id, tree, cur); err != nil {
			return err
		}
		c.Carried = append(c.Carried, cur)
	}
	c.Head = cur
	return nil
}

// replayTree returns the tree of commit id's changes applied on commit cur.
func replayTree(ctx context.Context, repo string, env []string, cur, id string) (string, error) {
	if _, err := output(ctx, repo, env, "read-tree", cur); err != nil {
		return "", fmt.Errorf("merge: commits: %w", err)
	}
	patch, err := output(ctx, repo, nil, "diff", "--binary", "--full-index", "--no-renames", "--no-ext-diff", "--no-textconv", "--no-color", id+"^", id)
	if err != nil {
		return "", fmt.Errorf("merge: commits: the changes of %s: %w", short(id), err)
	}
	if patch != "" {
		if _, err := outputIn(ctx, repo, env, []byte(patch), "apply", "--cached", "--3way", "--binary", "--whitespace=nowarn"); err != nil {
			unmerged, _ := output(ctx, repo, env, "diff", "--name-only", "--diff-filter=U")
			return "", fmt.Errorf("merge: commits: %s does not apply on the target's HEAD (conflicts in %s): %w",
				describe(ctx, repo, id), strings.Join(strings.Fields(unmerged), ", "), plan.ErrConflict)
		}
	}
	tree, err := output(ctx, repo, env, "write-tree")
	if err != nil {
		return "", fmt.Errorf("merge: commits: replay %s: %w", short(id), err)
	}
	return strings.TrimSpace(tree), nil
}

// commitLike writes a commit of tree on parent with the message, author and
// committer of commit id.
func commitLike(ctx context.Context, repo, id, tree, parent string) (string, error) {
	meta, err := output(ctx, repo, nil, "log", "-1", "--format=%an%x00%ae%x00%ad%x00%cn%x00%ce", "--date=raw", id)
	if err != nil {
		return "", fmt.Errorf("merge: commits: %w", err)
	}
	f := strings.Split(strings.TrimSuffix(meta, "\n"), "\x00")
	if len(f) != 5 {
		return "", fmt.Errorf("merge: commits: unexpected log of %s: %q", id, meta)
	}
	msg, err := output(ctx, repo, nil, "log", "-1", "--format=%B", id)
	if err != nil {
		return "", fmt.Errorf("merge: commits: %w", err)
	}
	env := []string{"GIT_AUTHOR_NAME=" + f[0], "GIT_AUTHOR_EMAIL=" + f[1], "GIT_AUTHOR_DATE=" + f[2],
		"GIT_COMMITTER_NAME=" + f[3], "GIT_COMMITTER_EMAIL=" + f[4]}
	out, err := outputIn(ctx, repo, env, []byte(msg), "commit-tree", tree, "-p", parent, "-F", "-")
	if err != nil {
		return "", fmt.Errorf("merge: commits: replay %s: %w", short(id), err)
	}
	return strings.TrimSpace(out), nil
}

// LandCommits moves the HEAD of the repository at ours from c.Target to
// c.Head (refusing if it moved meanwhile) and brings the index entries of
// the paths the commits change in line with it, leaving the work tree —
// which the file merge wrote — and every other index entry alone.
func LandCommits(ctx context.Context, ours string, c *Commits) error {
	if c == nil {
		return nil
	}
	if _, err := output(ctx, ours, nil, "update-ref", "-m", "tine merge --commits", "HEAD", c.Head, c.Target); err != nil {
		return fmt.Errorf("merge: commits: move the target's HEAD: %w: %w", tine.ErrState, err)
	}
	if len(c.Paths) == 0 {
		return nil
	}
	var list bytes.Buffer
	for _, p := range c.Paths {
		list.WriteString(":(top,literal)" + p + "\x00")
	}
	if _, err := outputIn(ctx, ours, nil, list.Bytes(), "reset", "-q", "--pathspec-from-file=-", "--pathspec-file-nul", c.Head); err != nil {
		return fmt.Errorf("merge: commits: the target's HEAD is %s, but its index was not updated (git reset fixes it): %w", short(c.Head), err)
	}
	return nil
}

// describe names commit id by its short id and subject.
func describe(ctx context.Context, repo, id string) string {
	s, err := output(ctx, repo, nil, "log", "-1", "--format=%h %s", id)
	if err != nil {
		return short(id)
	}
	return fmt.Sprintf("%q", strings.TrimSpace(s))
}

// short abbreviates a commit id.
func short(id string) string { return id[:min(len(id), 12)] }

// output runs git with args in repo and returns its output.
func output(ctx context.Context, repo string, env []string, args ...string) (string, error) {
	return outputIn(ctx, repo, env, nil, args...)
}

// outputIn is output with stdin.
func outputIn(ctx context.Context, repo string, env []string, stdin []byte, args ...string) (string, error) {
	out, err := runWith(ctx, nil, repo, environ(env...), stdin, args...) // the user's repository: git's own durability
	return string(out), err
}

// splitNul splits NUL-terminated fields.
func splitNul(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\x00"), "\x00")
}
