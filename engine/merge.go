package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/display"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/merge"
)

// Merge scopes.
const (
	ScopeAuto       = ""
	ScopeGit        = "git"
	ScopeFilesystem = "filesystem"
	ScopePaths      = "paths"
)

// MergeOptions says what to merge where.
type MergeOptions struct {
	Into      string   // target run; default the run's parent
	Scope     string   // git, filesystem or paths; default git for git workspaces, else filesystem
	Paths     []string // for the paths scope
	DryRun    bool     // plan and check only
	TextMerge bool     // merge text files both sides changed line-wise
	Force     bool     // apply even while commands run in the target
	// NoCommits squashes: the run's commits since the fork point are not
	// carried into the target's history, their changes land in its working
	// tree with the rest. By default a git-scope merge carries them,
	// replayed onto the target's HEAD with their messages and authors (or
	// fast-forwarded to); the filesystem and paths scopes carry files only.
	NoCommits bool `json:"no_commits,omitempty"`
	// IncludeGitInternals carries what the run changed in the internals of
	// the workspace's git directories (hooks, config; filesystem and paths
	// scopes): left out otherwise, as git would run them on the target's
	// side (merge.PlanOptions.IncludeGitInternals).
	IncludeGitInternals bool
}

// MergeResult is a merge's plan and what became of it.
type MergeResult struct {
	Run     *tine.Run      `json:"run"`
	Target  *tine.Run      `json:"target"`
	Plan    *merge.Plan    `json:"plan"`
	Commits *merge.Commits `json:"commits,omitempty"` // the run's commits as they land in the target's history
	Paths   []string       `json:"paths,omitempty"`   // the paths a paths-scope merge was narrowed to
	DryRun  bool           `json:"dry_run"`
	Applied bool           `json:"applied"`
}

// Merge carries run ref's changes since its fork point into the target run.
// It plans first; a plan with a conflict is reported (the result comes with
// an error wrapping merge.ErrConflict) and nothing is written. Otherwise,
// unless DryRun, the plan is applied to the target's files as a
// transaction, the run's commits land in the target's history (git scope,
// unless NoCommits; a commit that does not apply is a conflict too, found
// before anything is written), and the run is marked merged.
func (e *Engine) Merge(ctx context.Context, ref string, o MergeOptions) (res *MergeResult, err error) {
	src, unlock, err := e.LockRun(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer unlock()
	dst, err := e.mergeTarget(ctx, src, o.Into)
	if err != nil {
		return nil, err
	}
	scratch, err := e.scratch(src)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	clk := startMerge()
	defer func() { clk.done(e.obs, res, err) }()
	m := newMergeTx(e, src, dst)
	plan, err := m.plan(ctx, &o, scratch)
	clk.planned()
	if err != nil {
		return nil, err
	}
	res = &MergeResult{Run: src.Run, Target: dst.Run, Plan: plan, DryRun: o.DryRun, Paths: o.Paths}
	if plan.Clean() && o.Scope == ScopeGit && !o.NoCommits {
		defer e.GiveGitToOwner(dst)
		if res.Commits, err = merge.PlanCommits(ctx, e.Path(src.Workspace, src.Run), src.Run.GitHead, e.Path(dst.Workspace, dst.Run), scratch); err != nil {
			return res, m.recordCommitConflict(ctx, res, err)
		}
	}
	if !plan.Clean() || o.DryRun {
		return res, m.recordPlan(ctx, res)
	}
	thaw, err := e.rt.Quiesce(ctx, dst, o.Force)
	if err != nil {
		return res, err
	}
	journal := e.lay.Run(dst.Workspace.ID, dst.Run.ID).MergeJournal()
	clk.applying()
	// The run is marked merged inside the apply's commit, before its
	// leftovers go: a crash after the files landed finds the journal
	// committed, and the sweeper completes the record (completeMerge).
	// ctx cancelled (a Ctrl-C) stops the apply at its next step, which
	// rolls back; past the commit nothing stops it, and what it records
	// then is recorded whatever ctx says.
	committed, after := false, context.WithoutCancel(ctx)
	opts := merge.ApplyOptions{Note: mergeNote(src.Run.ID), Committed: func() error {
		committed, res.Applied = true, true
		return m.recordPlan(after, res)
	}}
	err = merge.Apply(ctx, plan, e.Path(dst.Workspace, dst.Run), journal, opts)
	clk.applied()
	thaw()
	switch {
	case err != nil && committed:
		return res, fmt.Errorf("the merge landed in %s, but finishing it failed (the next tine command completes it): %w", dst.Run.Name, err)
	case err != nil:
		return res, m.recordFailure(after, res, err)
	}
	if err := merge.LandCommits(after, e.Path(dst.Workspace, dst.Run), res.Commits); err != nil {
		return res, fmt.Errorf("the files merged, but the commits were not carried: %w", err)
	}
	return res, nil
}

// mergeNote is what a merge journal remembers of the merge for the sweeper.
func mergeNote(run string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"run": run})
	return b
}

// completeMerge records, for a merge whose files landed before a crash, the
// run named by the journal's note as merged (once).
func (e *Engine) completeMerge(ctx context.Context, ws string, note json.RawMessage) error {
	var n struct {
		Run string `json:"run"`
	}
	if err := json.Unmarshal(note, &n); err != nil || n.Run == "" {
		return nil // a journal of an older tine: nothing to complete
	}
	return e.store.Update(ctx, func(tx tine.Tx) error {
		r, err := tx.Run(n.Run)
		if errors.Is(err, tine.ErrNotFound) {
			return nil
		}
		if err != nil || r.Resolution == tine.ResolutionMerged || !r.Active() {
			return err
		}
		r.Resolution = tine.ResolutionMerged
		if err := tx.UpdateRun(r); err != nil {
			return err
		}
		return tx.AppendEvent(e.event(ws, r.ID, tine.EventMerge, map[string]any{"outcome": "merged", "recovered": true}))
	})
}

// mergeTarget resolves the target: ref, or the run's parent.
func (e *Engine) mergeTarget(ctx context.Context, src Ref, ref string) (Ref, error) {
	if ref == "" {
		if src.Run.Parent == "" {
			return Ref{}, tine.Optionf("%s has no parent; say where with %s: %w", src.Run.Name, tine.Opt("into"), tine.ErrInvalid)
		}
		ref = src.Run.Parent
	}
	var dst Ref
	err := e.store.View(ctx, func(tx tine.Tx) error {
		var err error
		if r, err := tx.Run(ref); err == nil {
			dst = Ref{src.Workspace, r}
			return nil
		}
		if r, err := tx.RunByName(src.Workspace.ID, ref); err == nil {
			dst = Ref{src.Workspace, r}
			return nil
		}
		dst, err = findRun(tx, ref)
		return err
	})
	switch {
	case err != nil:
		return Ref{}, err
	case dst.Workspace.ID != src.Workspace.ID:
		return Ref{}, fmt.Errorf("%s is in another workspace: %w", dst.Run.Name, tine.ErrInvalid)
	case dst.Run.ID == src.Run.ID:
		return Ref{}, fmt.Errorf("cannot merge %s into itself: %w", src.Run.Name, tine.ErrInvalid)
	case !dst.Run.Active():
		return Ref{}, fmt.Errorf("target %s is %s: %w", dst.Run.Name, dst.Run.State, tine.ErrState)
	}
	return dst, nil
}

// scratch makes an empty directory for a merge's staged content; the
// caller removes it once the plan is applied or dropped.
func (e *Engine) scratch(r Ref) (string, error) {
	dir := e.lay.Run(r.Workspace.ID, r.Run.ID).MergeScratch(tine.NewID(""))
	return dir, os.MkdirAll(dir, 0o700)
}

// mergeTx is a merge of run src's changes into run dst: its plan and
// what it records of it. Merge and Combine make one.
type mergeTx struct {
	e        *Engine
	src, dst Ref
}

func newMergeTx(e *Engine, src, dst Ref) *mergeTx { return &mergeTx{e: e, src: src, dst: dst} }

// plan builds the merge plan in the chosen scope; staged content goes under scratch.
func (m *mergeTx) plan(ctx context.Context, o *MergeOptions, scratch string) (*merge.Plan, error) {
	p, _, err := m.planWork(ctx, o, scratch)
	return p, err
}

// planWork is plan, returning too the run's changes the plan was made
// from: outside the paths scope, its layer changes less the byproducts
// of the target's tine.toml (Work).
func (m *mergeTx) planWork(ctx context.Context, o *MergeOptions, scratch string) (*merge.Plan, []layer.Change, error) {
	e, src, dst := m.e, m.src, m.dst
	theirs, ours := e.Path(src.Workspace, src.Run), e.Path(dst.Workspace, dst.Run)
	if err := e.chooseScope(src, theirs, o); err != nil {
		return nil, nil, err
	}
	var plan *merge.Plan
	var changes []layer.Change
	err := e.withOrigin(ctx, src, func(be layer.Backend, br layer.Run, base []string) error {
		var err error
		if changes, err = be.Changes(ctx, br, base); err != nil {
			return err
		}
		if o.Scope != ScopePaths {
			changes = dropByproducts(changes, e.byproducts(dst))
		}
		baseDir, release, err := be.Read(ctx, base, filepath.Join(scratch, "base"))
		if err != nil {
			return err
		}
		defer release()
		if o.Scope == ScopeGit {
			if err := gitCanOpen(changes, theirs, ours); err != nil {
				return err
			}
			plan, err = merge.PlanGit(ctx, merge.GitOptions{Theirs: theirs, Base: baseDir, Head: src.Run.GitHead,
				Ours: ours, Changed: changedPaths(changes), Scratch: scratch, TextMerge: o.TextMerge})
			return err
		}
		plan, err = merge.PlanFiles(ctx, baseDir, theirs, ours, changes, merge.PlanOptions{Paths: o.Paths,
			TextMerge: o.TextMerge, Scratch: scratch, IncludeGitInternals: o.IncludeGitInternals})
		return err
	})
	return plan, changes, err
}

// gitPathMax is PATH_MAX. git opens every file by its path (and, listing
// a directory it cannot open, skips it with only a warning), and so does
// the git-scope planner beside it: a path this long under a view is out
// of their reach.
const gitPathMax = 4096

// gitCanOpen refuses, before anything is planned, a git-scope merge of a
// change whose path under one of roots is PATH_MAX or longer: git would
// leave it out of the merge without a word. The filesystem and paths
// scopes handle such paths.
func gitCanOpen(changes []layer.Change, roots ...string) error {
	for _, c := range changes {
		for _, root := range roots {
			if n := len(root) + 1 + len(c.Path); n >= gitPathMax {
				return tine.Optionf("git scope: the path %s is %d bytes long under %s, too long for git (PATH_MAX is %d); merge it with %s or %s: %w",
					display.Path(c.Path), n, display.Path(root), gitPathMax, tine.Opt("scope", ScopeFilesystem), tine.Opt("scope", ScopePaths), tine.ErrUnsupported)
			}
		}
	}
	return nil
}

// changedPaths returns the paths of changes.
func changedPaths(changes []layer.Change) []string {
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = c.Path
	}
	return out
}

// chooseScope settles the scope: paths when paths are given, git for a run
// forked from a git commit, else filesystem.
func (e *Engine) chooseScope(src Ref, theirs string, o *MergeOptions) error {
	if len(o.Paths) > 0 {
		if o.Scope != ScopeAuto && o.Scope != ScopePaths {
			return tine.Optionf("%s cannot be combined with %s: %w", tine.Opt("paths"), tine.Opt("scope", o.Scope), tine.ErrInvalid)
		}
		o.Scope = ScopePaths
		paths, err := merge.CheckPaths(theirs, src.Workspace.Path, o.Paths)
		o.Paths = paths
		return err
	}
	if o.Scope == ScopePaths {
		return tine.Optionf("%s needs at least one path: %w", tine.Opt("paths"), tine.ErrInvalid)
	}
	if o.Scope == ScopeAuto {
		o.Scope = ScopeFilesystem
		if src.Run.GitHead != "" {
			o.Scope = ScopeGit
		}
	}
	if o.IncludeGitInternals && o.Scope == ScopeGit {
		return tine.Optionf("%s goes with %s or %s (the git scope never carries .git): %w", tine.Opt("include_git_internals"),
			tine.Opt("scope", ScopeFilesystem), tine.Opt("paths"), tine.ErrInvalid)
	}
	if o.Scope == ScopeGit && src.Run.GitHead == "" {
		return tine.Optionf("%s was not forked from a git commit; use %s: %w", src.Run.Name, tine.Opt("scope", ScopeFilesystem), tine.ErrInvalid)
	}
	return nil
}

// recordPlan logs the merge and, when it was applied, marks the run merged.
func (m *mergeTx) recordPlan(ctx context.Context, res *MergeResult) error {
	e, src, dst := m.e, m.src, m.dst
	outcome := "merged"
	switch {
	case !res.Plan.Clean():
		outcome = "conflict"
	case res.DryRun:
		outcome = "dry_run"
	}
	err := e.store.Update(ctx, func(tx tine.Tx) error {
		if res.Applied {
			src.Run.Resolution = tine.ResolutionMerged
			if err := tx.UpdateRun(src.Run); err != nil {
				return err
			}
		}
		return firstError(
			tx.AppendEvent(e.event(src.Workspace.ID, src.Run.ID, tine.EventMerge, mergeDetail(res, outcome))),
			tx.AppendEvent(e.event(dst.Workspace.ID, dst.Run.ID, tine.EventMergedInto, mergeDetail(res, outcome))))
	})
	if err == nil && outcome == "conflict" {
		err = fmt.Errorf("%d conflicting path(s); nothing was written: %w", len(res.Plan.Conflicts()), merge.ErrConflict)
	}
	return err
}

// recordCommitConflict logs, for a merge whose files merge cleanly but
// whose commits do not apply on the target's HEAD (err wraps
// merge.ErrConflict), the conflict, and returns err; any other error is
// returned as it is.
func (m *mergeTx) recordCommitConflict(ctx context.Context, res *MergeResult, err error) error {
	if !errors.Is(err, merge.ErrConflict) {
		return err
	}
	detail := mergeDetail(res, "conflict")
	detail["error"] = err.Error()
	rerr := m.e.store.Update(ctx, func(tx tine.Tx) error {
		return tx.AppendEvent(m.e.event(m.src.Workspace.ID, m.src.Run.ID, tine.EventMerge, detail))
	})
	return errors.Join(tine.Optionf("%w; nothing was written (%s merges the files alone)", err, tine.Opt("no_commits")), rerr)
}

func (m *mergeTx) recordFailure(ctx context.Context, res *MergeResult, cause error) error {
	e, src, dst := m.e, m.src, m.dst
	detail := mergeDetail(res, "failed")
	detail["error"] = cause.Error()
	err := e.store.Update(ctx, func(tx tine.Tx) error {
		return tx.AppendEvent(e.event(src.Workspace.ID, src.Run.ID, tine.EventMerge, detail))
	})
	return errors.Join(fmt.Errorf("merge not applied, %s unchanged: %w", dst.Run.Name, cause), err)
}

// maxEventPaths bounds the paths an event lists per action; the counts
// are always complete.
const maxEventPaths = 200

// mergeDetail summarises a merge for the event log: per action, the count
// and (up to maxEventPaths of) the paths.
func mergeDetail(res *MergeResult, outcome string) map[string]any {
	d := map[string]any{"outcome": outcome, "scope": res.Plan.Scope, "run": res.Run.ID, "target": res.Target.ID}
	counts := map[merge.Action]int{}
	for _, en := range res.Plan.Entries {
		counts[en.Action]++
		key := string(en.Action)
		if counts[en.Action] <= maxEventPaths {
			paths, _ := d[key].([]string)
			d[key] = append(paths, en.Path)
		}
	}
	for a, n := range counts {
		d[string(a)+"_count"] = n
	}
	if n := len(res.Plan.LeftOut); n > 0 {
		d["left_out_count"] = n
		var paths []string
		for _, l := range res.Plan.LeftOut[:min(n, maxEventPaths)] {
			paths = append(paths, l.Path)
		}
		d["left_out"] = paths
	}
	return d
}
