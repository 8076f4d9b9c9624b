package fleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/internal/gitcmd"
)

// EngineRunner returns the Runner of a node whose engine is e: a task's
// workspace is a clone of its repository at its commit, made in
// dir/TASK/repo and taken under management by e (named after the task,
// its home recorded as node); its fork-run is the one tine fork-run runs,
// in manual merge mode (the winner travels back as a patch; nothing is
// merged on the node).
func EngineRunner(e *engine.Engine, f *Fleet, node, dir string) Runner {
	return func(ctx context.Context, t *Task) Result {
		src, err := makeWorkspace(ctx, e, t, filepath.Join(dir, t.ID, "repo"))
		if err != nil {
			return Result{Err: err}
		}
		res := Result{Workspace: src.Workspace.ID}
		if err := f.SetHome(ctx, src.Workspace.ID, node); err != nil {
			res.Err = err
			return res
		}
		res.Report, res.Note, res.Err = runTask(ctx, e, f, t, src)
		if res.Err != nil || res.Report == nil || res.Report.Winner == "" {
			return res
		}
		res.Patch, res.Commits, res.Err = winnerPatch(ctx, e, src, res.Report, t.Commit)
		if res.Err == nil && len(res.Commits) > 0 {
			res.Head, res.Bundle, res.Err = winnerBundle(ctx, e, res.Report, t.Commit)
		}
		return res
	}
}

// EngineCleaner releases, with e, the workspace a task made (its forks
// discarded with their work: the task's results are in the fleet) and
// removes its clone below dir, where EngineRunner made it.
func EngineCleaner(e *engine.Engine, dir string) Cleaner {
	return func(ctx context.Context, t *Task) error {
		if !filepath.IsLocal(t.ID) || strings.ContainsRune(t.ID, filepath.Separator) {
			return fmt.Errorf("task id %q is not a name: %w", t.ID, tine.ErrInvalid)
		}
		if _, err := e.Release(ctx, t.Workspace, true); err != nil && !errors.Is(err, tine.ErrNotFound) {
			return err
		}
		return os.RemoveAll(filepath.Join(dir, t.ID))
	}
}

// makeWorkspace clones t's repository at its commit into path and takes
// it under management.
func makeWorkspace(ctx context.Context, e *engine.Engine, t *Task, path string) (engine.Ref, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return engine.Ref{}, err
	}
	// upload-pack runs without the command line's configuration: it is
	// given tine's (safe.directory among it, or a repository of another
	// user than the node's, a submitter's, is refused as of dubious
	// ownership).
	uploadPack := "--upload-pack=git " + strings.Join(gitcmd.Config, " ") + " upload-pack"
	if _, err := gitcmd.Run(ctx, filepath.Dir(path), nil, nil, nil, "clone", "--quiet", "--no-hardlinks", "--no-checkout", uploadPack, "--", t.Repo, path); err != nil {
		return engine.Ref{}, fmt.Errorf("clone %s: %w", t.Repo, err)
	}
	if _, err := gitcmd.Run(ctx, path, nil, nil, nil, "checkout", "--quiet", "--detach", t.Commit); err != nil {
		return engine.Ref{}, fmt.Errorf("check out %s: %w", t.Commit, err)
	}
	return e.Init(ctx, engine.InitOptions{Path: path, Name: t.ID})
}

// runTask runs t's fork-run from src in manual merge mode, its spend
// charged to t's batch as it goes (see Fleet.meter); note says why it was
// stopped, if its batch's budget stopped it.
func runTask(ctx context.Context, e *engine.Engine, f *Fleet, t *Task, src engine.Ref) (rep *forkrun.Report, note string, err error) {
	cfg, err := forkrun.LoadConfig(e, src, "")
	if err != nil {
		return nil, "", err
	}
	req := t.Request
	req.MergeMode = string(forkrun.Manual)
	o, err := forkrun.Configure(cfg, src, req, os.Getenv)
	if err != nil {
		return nil, "", err
	}
	rctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	h, err := forkrun.Start(rctx, forkrun.NewHost(e), o)
	if err != nil {
		return nil, "", err
	}
	var withdrawn string
	rep, note, err = f.meter(ctx, t.ID, h, func(why string) {
		withdrawn = why
		stop(ErrCanceled)
	})
	if withdrawn != "" && ctx.Err() == nil {
		return rep, withdrawn, fmt.Errorf("%s: %w", withdrawn, ErrCanceled)
	}
	return rep, note, err
}

// winnerPatch returns the binary patch from commit to the winner's files
// (its commits since, staged, unstaged and untracked changes), made with
// an index of its own so the fork's is not touched, and the winner's
// commits since commit.
func winnerPatch(ctx context.Context, e *engine.Engine, src engine.Ref, rep *forkrun.Report, commit string) ([]byte, []string, error) {
	fk := rep.Fork(rep.Winner)
	if fk == nil {
		return nil, nil, fmt.Errorf("winner %s is not in the report: %w", rep.Winner, tine.ErrNotFound)
	}
	w, err := e.FindRun(ctx, fk.Run)
	if err != nil {
		return nil, nil, err
	}
	dir := e.Path(w.Workspace, w.Run)
	idx, err := os.CreateTemp("", "tine-index-")
	if err != nil {
		return nil, nil, err
	}
	idx.Close()
	os.Remove(idx.Name()) // git makes it
	defer os.Remove(idx.Name())
	drivers, err := gitcmd.Drivers(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	env := gitcmd.Env("GIT_INDEX_FILE=" + idx.Name())
	if _, err := gitcmd.Run(ctx, dir, env, drivers, nil, "add", "--all", "--", "."); err != nil {
		return nil, nil, fmt.Errorf("winner %s: %w", rep.Winner, err)
	}
	patch, err := gitcmd.Run(ctx, dir, env, drivers, nil, "diff", "--cached", "--binary", "--no-renames", "--no-ext-diff", commit, "--")
	if err != nil {
		return nil, nil, fmt.Errorf("winner %s: %w", rep.Winner, err)
	}
	log, err := gitcmd.Run(ctx, dir, nil, nil, nil, "log", "--reverse", "--format=%H %s", commit+"..HEAD", "--")
	if err != nil {
		return nil, nil, fmt.Errorf("winner %s: %w", rep.Winner, err)
	}
	return patch, lines(string(log)), nil
}

// winnerBundle returns the winner's HEAD and a git bundle of its commits
// since commit (which the bundle needs to be unpacked), for tine fetch to
// replay them.
func winnerBundle(ctx context.Context, e *engine.Engine, rep *forkrun.Report, commit string) (string, []byte, error) {
	w, err := e.FindRun(ctx, rep.Fork(rep.Winner).Run)
	if err != nil {
		return "", nil, err
	}
	dir := e.Path(w.Workspace, w.Run)
	head, err := gitcmd.Run(ctx, dir, nil, nil, nil, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return "", nil, fmt.Errorf("winner %s: %w", rep.Winner, err)
	}
	tmp, err := os.MkdirTemp("", "tine-bundle-")
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(tmp)
	file := filepath.Join(tmp, "commits.bundle")
	if _, err := gitcmd.Run(ctx, dir, nil, nil, nil, "bundle", "create", "--quiet", file, commit+"..HEAD"); err != nil {
		return "", nil, fmt.Errorf("winner %s: bundle its commits: %w", rep.Winner, err)
	}
	b, err := os.ReadFile(file)
	return strings.TrimSpace(string(head)), b, err
}

// lines splits s into its non-empty lines.
func lines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}
