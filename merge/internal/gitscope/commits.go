package gitscope

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/gitcmd"
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
	// configuration: it is given tine's itself (safe.directory among it, or
	// a run's repository owned by another user than tine's, a workspace's
	// owner, is refused as of dubious ownership).
	uploadPack := "--upload-pack=git " + strings.Join(gitcmd.Config, " ") + " upload-pack"
	if _, err := output(ctx, ours, nil, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
		uploadPack, theirs, list[len(list)-1]); err != nil {
		return nil, fmt.Errorf("merge: commits: fetch the run's commits: %w", err)
	}
	c := &Commits{Target: oh}
	if oh == forkHead {
		c.Head, c.Carried, c.FastForward = list[len(list)-1], list, true
		return c, nil
	}
	sh, err := targetShadow(ctx, ours, filepath.Join(scratch, "commits-git"))
	if err != nil {
		return nil, err
	}
	return c, c.replay(ctx, sh, forkHead, filepath.Join(scratch, "commits-index"), list)
}

// targetShadow makes a private git directory at dir that writes and reads
// the objects of the repository at ours and nothing else of it (none of
// its configuration, attributes or hooks), and returns the environment
// that runs git with it.
func targetShadow(ctx context.Context, ours, dir string) ([]string, error) {
	objects, err := output(ctx, ours, nil, "rev-parse", "--path-format=absolute", "--git-path", "objects")
	if err != nil {
		return nil, fmt.Errorf("merge: commits: the target's objects: %w", err)
	}
	for _, d := range []string{"refs", "objects"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("merge: commits: %w", err)
		}
	}
	for name, data := range map[string]string{"HEAD": "ref: refs/heads/tine\n", "config": "[core]\n\tbare = true\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			return nil, fmt.Errorf("merge: commits: %w", err)
		}
	}
	return []string{"GIT_DIR=" + dir, "GIT_OBJECT_DIRECTORY=" + strings.TrimSpace(objects)}, nil
}

// runCommits lists the commits of theirs after forkHead, oldest first,
// refusing merge commits and a HEAD that does not descend from forkHead
// (another branch checked out, or history rewritten): its commits are not
// the run's work on top of the fork point.
func runCommits(ctx context.Context, theirs, forkHead string) ([]string, error) {
	if _, err := output(ctx, theirs, nil, "merge-base", "--is-ancestor", forkHead, "HEAD"); err != nil {
		return nil, fmt.Errorf("merge: commits: the run's HEAD no longer descends from the fork point %s (another branch checked out, or history rewritten): %w", short(forkHead), plan.ErrConflict)
	}
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
// three-way (git apply --cached --3way) to the temporary index holding the
// commit made before it, so no work tree is touched. git runs with the
// target's shadow sh: a merge driver the target's configuration names is
// not run.
func (c *Commits) replay(ctx context.Context, sh []string, forkHead, index string, list []string) error {
	if _, err := output(ctx, "", sh, "merge-base", "--is-ancestor", forkHead, c.Target); err != nil {
		return fmt.Errorf("merge: commits: the target's history no longer holds the fork point %s (rewritten since?): %w", short(forkHead), plan.ErrConflict)
	}
	env := append(sh[:len(sh):len(sh)], "GIT_INDEX_FILE="+index)
	cur := c.Target
	for _, id := range list {
		tree, err := replayTree(ctx, sh, env, cur, id)
		if err != nil {
			return err
		}
		if cur, err = commitLike(ctx, sh, id, tree, cur); err != nil {
			return err
		}
		c.Carried = append(c.Carried, cur)
	}
	c.Head = cur
	return nil
}

// replayTree returns the tree of commit id's changes applied on commit cur.
func replayTree(ctx context.Context, sh, env []string, cur, id string) (string, error) {
	if _, err := output(ctx, "", env, "read-tree", cur); err != nil {
		return "", fmt.Errorf("merge: commits: %w", err)
	}
	patch, err := output(ctx, "", sh, "diff", "--binary", "--full-index", "--no-renames", "--no-ext-diff", "--no-textconv", "--no-color", id+"^", id)
	if err != nil {
		return "", fmt.Errorf("merge: commits: the changes of %s: %w", short(id), err)
	}
	if patch != "" {
		if _, err := outputIn(ctx, "", env, []byte(patch), "apply", "--cached", "--3way", "--binary", "--whitespace=nowarn"); err != nil {
			unmerged, _ := output(ctx, "", env, "diff", "--name-only", "--diff-filter=U")
			return "", fmt.Errorf("merge: commits: %s does not apply on the target's HEAD (conflicts in %s): %w",
				describe(ctx, sh, id), strings.Join(strings.Fields(unmerged), ", "), plan.ErrConflict)
		}
	}
	tree, err := output(ctx, "", env, "write-tree")
	if err != nil {
		return "", fmt.Errorf("merge: commits: replay %s: %w", short(id), err)
	}
	return strings.TrimSpace(tree), nil
}

// commitLike writes a commit of tree on parent with the message, author and
// committer of commit id.
func commitLike(ctx context.Context, sh []string, id, tree, parent string) (string, error) {
	meta, err := output(ctx, "", sh, "log", "-1", "--format=%an%x00%ae%x00%ad%x00%cn%x00%ce", "--date=raw", id)
	if err != nil {
		return "", fmt.Errorf("merge: commits: %w", err)
	}
	f := strings.Split(strings.TrimSuffix(meta, "\n"), "\x00")
	if len(f) != 5 {
		return "", fmt.Errorf("merge: commits: unexpected log of %s: %q", id, meta)
	}
	msg, err := output(ctx, "", sh, "log", "-1", "--format=%B", id)
	if err != nil {
		return "", fmt.Errorf("merge: commits: %w", err)
	}
	env := append(sh[:len(sh):len(sh)], "GIT_AUTHOR_NAME="+f[0], "GIT_AUTHOR_EMAIL="+f[1], "GIT_AUTHOR_DATE="+f[2],
		"GIT_COMMITTER_NAME="+f[3], "GIT_COMMITTER_EMAIL="+f[4])
	out, err := outputIn(ctx, "", env, []byte(msg), "commit-tree", tree, "-p", parent, "-F", "-")
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
	notUpdated := func(err error) error {
		return fmt.Errorf("merge: commits: the target's HEAD is %s, but its index was not updated (git reset fixes it): %w", short(c.Head), err)
	}
	raw, err := output(ctx, ours, nil, "diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", c.Target, c.Head)
	if err != nil {
		return notUpdated(err)
	}
	info := indexRecords(raw)
	if len(info) == 0 {
		return nil
	}
	off, err := gitcmd.Drivers(ctx, ours)
	if err != nil {
		return notUpdated(err)
	}
	// update-index sets the entries as given, without refreshing the
	// others from the work tree as git reset would.
	// Writing the index re-hashes racily clean files, through the clean
	// filters of the target's configuration unless they are turned off.
	args := append(off, "update-index", "-z", "--add", "--remove", "--replace", "--index-info")
	if _, err := outputIn(ctx, ours, nil, info, args...); err != nil {
		return notUpdated(err)
	}
	return nil
}

// indexRecords turns diff-tree's raw -z output into update-index --index-info
// records setting each changed path's entry to its new version (mode 0
// removes it).
func indexRecords(raw string) []byte {
	var out bytes.Buffer
	f := splitNul(raw)
	for i := 0; i+1 < len(f); i += 2 {
		meta := strings.Fields(strings.TrimPrefix(f[i], ":")) // old mode, new mode, old id, new id, status
		if len(meta) < 5 {
			continue
		}
		fmt.Fprintf(&out, "%s %s\t%s\x00", meta[1], meta[3], f[i+1])
	}
	return out.Bytes()
}

// describe names commit id by its short id and subject.
func describe(ctx context.Context, sh []string, id string) string {
	s, err := output(ctx, "", sh, "log", "-1", "--format=%h %s", id)
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
	out, err := runWith(ctx, nil, repo, gitcmd.Env(env...), stdin, args...) // the user's repository: git's own durability
	return string(out), err
}

// splitNul splits NUL-terminated fields.
func splitNul(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\x00"), "\x00")
}
