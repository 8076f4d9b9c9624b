package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/merge"
)

// Take is one part of a combine: a path to take from a fork of the group.
type Take struct {
	Fork string `json:"fork"` // run id or name, within the group
	Path string `json:"path"` // workspace-relative
}

// CombinePart is what a combine takes from one fork: its paths, planned
// as a paths-scope merge into the group's parent.
type CombinePart struct {
	Run   *tine.Run   `json:"run"`
	Paths []string    `json:"paths"`
	Plan  *merge.Plan `json:"plan"`
}

// CombineResult is a combine's plan and what became of it. Plan holds
// every part's entries, in path order; a path two forks' parts both
// touch is in conflict there, once per fork.
type CombineResult struct {
	Group   string         `json:"group"`
	Target  *tine.Run      `json:"target"`
	Parts   []*CombinePart `json:"parts"`
	Plan    *merge.Plan    `json:"plan"`
	Forks   []string       `json:"forks"` // Forks[i] names the fork Plan.Entries[i] is taken from
	DryRun  bool           `json:"dry_run"`
	Applied bool           `json:"applied"`
}

// Combine carries the chosen paths of several forks of group ref into the
// group's parent as one merge: each fork's paths are planned as a
// paths-scope merge (MergeOptions.Paths), the plans are joined, and a path
// taken from two forks (the same path, or one below the other) is a
// conflict, as is any conflict with the parent. Only a clean joined plan
// is applied, once, as one journaled transaction: all the parts land or
// none. The forks are left as they are. A plan with a conflict comes with
// an error wrapping merge.ErrConflict and nothing written; dryRun only
// plans.
func (e *Engine) Combine(ctx context.Context, ref string, takes []Take, dryRun bool) (*CombineResult, error) {
	if len(takes) == 0 {
		return nil, tine.Optionf("combine: nothing to take; say %s FORK:PATH: %w", tine.Opt("take"), tine.ErrInvalid)
	}
	g, runs, err := e.findGroup(ctx, ref)
	if err != nil {
		return nil, err
	}
	unlock, err := e.LockWorkspace(g.Workspace)
	if err != nil {
		return nil, err
	}
	defer unlock()
	parts, err := e.combineParts(ctx, g, runs, takes)
	if err != nil {
		return nil, err
	}
	first, err := e.FindRun(ctx, parts[0].Run.ID)
	if err != nil {
		return nil, err
	}
	dst, err := e.mergeTarget(ctx, first, g.Parent)
	if err != nil {
		return nil, err
	}
	res := &CombineResult{Group: g.ID, Target: dst.Run, Parts: parts, DryRun: dryRun}
	scratch, err := e.scratch(dst)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	for i, p := range parts {
		src := Ref{first.Workspace, p.Run}
		o := MergeOptions{Scope: ScopePaths, Paths: p.Paths}
		if p.Plan, err = newMergeTx(e, src, dst).plan(ctx, &o, filepath.Join(scratch, fmt.Sprint(i))); err != nil {
			return nil, fmt.Errorf("combine: plan %s: %w", p.Run.Name, err)
		}
		p.Paths = o.Paths
	}
	res.Plan, res.Forks = joinPlans(parts)
	if !res.Plan.Clean() || dryRun {
		return res, e.recordCombine(ctx, dst, res)
	}
	thaw, err := e.rt.Quiesce(ctx, dst, false)
	if err != nil {
		return res, err
	}
	journal := e.lay.Run(dst.Workspace.ID, dst.Run.ID).MergeJournal()
	err = merge.Apply(ctx, res.Plan, e.Path(dst.Workspace, dst.Run), journal, merge.ApplyOptions{Note: mergeNote(""),
		Committed: func() error { res.Applied = true; return nil }})
	thaw()
	if err != nil && !res.Applied {
		return res, fmt.Errorf("combine not applied, %s unchanged: %w", dst.Run.Name, err)
	}
	if rerr := e.recordCombine(ctx, dst, res); err == nil {
		err = rerr
	}
	return res, err
}

// combineParts resolves the takes to the group's live forks, one part per
// fork in the order they are first named.
func (e *Engine) combineParts(ctx context.Context, g *tine.Group, runs []*tine.Run, takes []Take) ([]*CombinePart, error) {
	var parts []*CombinePart
	byRun := map[string]*CombinePart{}
	for _, t := range takes {
		if strings.TrimSpace(t.Path) == "" {
			return nil, tine.Optionf("combine: %s %s: no path: %w", tine.Opt("take"), t.Fork, tine.ErrInvalid)
		}
		r, err := e.chosenRun(ctx, g, runs, t.Fork)
		if err != nil {
			return nil, err
		}
		if !r.Active() {
			return nil, fmt.Errorf("combine: %s is %s: %w", r.Name, r.State, tine.ErrState)
		}
		p := byRun[r.ID]
		if p == nil {
			p = &CombinePart{Run: r}
			byRun[r.ID] = p
			parts = append(parts, p)
		}
		p.Paths = append(p.Paths, t.Path)
	}
	return parts, nil
}

// joinPlans joins the parts' plans into one, in path order, and names
// the fork of each entry; entries of two parts that clash become
// conflicts. What the parts left out is listed part by part.
func joinPlans(parts []*CombinePart) (*merge.Plan, []string) {
	type owned struct {
		e    merge.Entry
		fork string
	}
	var all []owned
	for _, p := range parts {
		for _, en := range p.Plan.Entries {
			all = append(all, owned{en, p.Run.Name})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].e.Path < all[j].e.Path })
	for i := range all {
		for j := range all {
			a, b := &all[i], &all[j]
			if a.fork != b.fork && clash(a.e, b.e) {
				a.e.Action = merge.Conflict
				a.e.Reason = fmt.Sprintf("taken from %s and from %s (%s)", a.fork, b.fork, b.e.Path)
			}
		}
	}
	plan, forks := &merge.Plan{Scope: ScopePaths}, []string(nil)
	for _, p := range parts {
		plan.LeftOut = append(plan.LeftOut, p.Plan.LeftOut...)
	}
	for i, o := range all {
		if i > 0 && o.e.Action != merge.Conflict && keptDir(o.e) && all[i-1].e.Path == o.e.Path {
			continue // the same directory, made by two forks: once is enough
		}
		plan.Entries, forks = append(plan.Entries, o.e), append(forks, o.fork)
	}
	return plan, forks
}

// clash reports whether entries a and b of two forks cannot both land:
// they are at the same path, but for a directory both keep, or one is
// below the other, but for a directory kept above.
func clash(a, b merge.Entry) bool {
	switch {
	case a.Path == b.Path:
		return !keptDir(a) || !keptDir(b)
	case strings.HasPrefix(b.Path, a.Path+"/"):
		return !keptDir(a)
	case strings.HasPrefix(a.Path, b.Path+"/"):
		return !keptDir(b)
	}
	return false
}

// keptDir reports whether e leaves a directory at its path.
func keptDir(e merge.Entry) bool { return e.Type == "dir" && e.Change != layer.Deleted }

// recordCombine logs the combine on the target.
func (e *Engine) recordCombine(ctx context.Context, dst Ref, res *CombineResult) error {
	outcome := "combined"
	switch {
	case !res.Plan.Clean():
		outcome = "conflict"
	case !res.Applied:
		outcome = "dry_run"
	}
	detail := map[string]any{"group": res.Group, "outcome": outcome, "paths": len(res.Plan.Entries)}
	var from []string
	for _, p := range res.Parts {
		from = append(from, p.Run.Name+":"+strings.Join(p.Paths, ","))
	}
	detail["takes"] = from
	err := e.store.Update(ctx, func(tx tine.Tx) error {
		return tx.AppendEvent(e.event(dst.Workspace.ID, dst.Run.ID, tine.EventCombinedInto, detail))
	})
	if err == nil && outcome == "conflict" {
		err = fmt.Errorf("%d conflicting path(s); nothing was written: %w", len(res.Plan.Conflicts()), merge.ErrConflict)
	}
	return err
}
