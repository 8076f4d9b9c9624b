package resolvecheck

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// GitMerge is the second oracle of the git scope: git merge itself, of a
// commit of theirs into a commit of ours, both children of a commit of
// base, in a scratch repository under dir (an empty directory). Rename
// detection is off, as the git scope plans a rename as a deletion and an
// addition (the recursive strategy: ort in git 2.39 detects renames even
// with -X no-renames). It returns the conflicting paths, or the merged GitView.
func GitMerge(ctx context.Context, dir string, base, ours, theirs Tree) (*Expect, error) {
	g := &scratchRepo{ctx: ctx, dir: dir}
	steps := []func() error{
		func() error { return g.git("init", "-q", "-b", "base") },
		func() error { return g.commit(base, "base") },
		func() error { return g.git("checkout", "-q", "-b", "theirs") },
		func() error { return g.commit(theirs, "theirs") },
		func() error { return g.git("checkout", "-q", "-b", "ours", "base") },
		func() error { return g.commit(ours, "ours") },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	x := &Expect{Reasons: map[string]string{}}
	if err := g.git("merge", "-q", "--no-edit", "-s", "recursive", "-X", "no-renames", "theirs"); err != nil {
		out, err2 := g.out("diff", "--name-only", "-z", "--diff-filter=U")
		if err2 != nil {
			return nil, fmt.Errorf("%w (after %w)", err2, err)
		}
		for _, p := range strings.Split(strings.TrimSuffix(out, "\x00"), "\x00") {
			if p != "" {
				x.conflict(p, "git merge: conflict")
			}
		}
		if len(x.Conflicts) == 0 {
			return nil, err
		}
		sort.Strings(x.Conflicts)
		return x, nil
	}
	t, err := Read(dir)
	if err != nil {
		return nil, err
	}
	x.Tree = GitView(t)
	return x, nil
}

type scratchRepo struct {
	ctx context.Context
	dir string
}

func (g *scratchRepo) cmd(args ...string) *exec.Cmd {
	cmd := exec.CommandContext(g.ctx, "git", append([]string{"-c", "user.name=oracle", "-c", "user.email=oracle@example.invalid",
		"-c", "core.autocrlf=false", "-c", "merge.renames=false", "-c", "diff.renames=false", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=base"}, args...)...)
	cmd.Dir = g.dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "LC_ALL=C")
	return cmd
}

func (g *scratchRepo) git(args ...string) error {
	_, err := g.out(args...)
	return err
}

func (g *scratchRepo) out(args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := g.cmd(args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// commit makes the work tree t's GitView and commits it.
func (g *scratchRepo) commit(t Tree, msg string) error {
	ents, err := os.ReadDir(g.dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Name() != ".git" {
			if err := os.RemoveAll(filepath.Join(g.dir, e.Name())); err != nil {
				return err
			}
		}
	}
	view := GitView(t)
	for _, p := range view.Paths() {
		name := at(g.dir, p)
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return err
		}
		if err := create(name, view[p]); err != nil {
			return err
		}
	}
	if err := g.git("add", "-A", "."); err != nil {
		return err
	}
	return g.git("commit", "-q", "--allow-empty", "-m", msg)
}
