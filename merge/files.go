package merge

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/merge/internal/plan"
)

// PlanOptions tunes PlanFiles.
type PlanOptions struct {
	// Paths narrows the merge to these paths (files or directories, cleaned
	// by CheckPaths): only changes at or under them are planned. Empty means
	// the whole workspace.
	Paths []string
	// TextMerge merges text files changed on both sides line-wise (diff3)
	// instead of reporting a conflict.
	TextMerge bool
	// Scratch is an existing directory where text merges are staged; it must
	// outlive the plan's Apply. Required with TextMerge.
	Scratch string
	// IncludeGitInternals carries the internals of the workspace's git
	// directories too: hooks, config and everything else in a .git that is
	// not objects, refs, logs or the index. Without it they are left out
	// (Plan.LeftOut): what the run wrote there, git would run on the
	// target's side, as the person, at their next git command.
	IncludeGitInternals bool
}

// PlanFiles plans a three-way merge at path granularity of a run's changes
// into a target. base is a directory holding the fork point's files, theirs
// the run's view, ours the target's current view, and changes what theirs
// changed since base, sorted by path (as layer.Backend.Changes returns them).
//
// Each changed path is compared by signature (type, permission bits, and
// content or link target): when ours still matches base the run's version
// is taken, when ours already matches theirs the path has converged, and
// otherwise it is a conflict with a reason. A write that would need a parent
// that is not a directory in ours (a file, a symlink, a deleted directory)
// is a conflict too: nothing is ever written through a symlink. Entries
// under a merge's staging directory (".tine-merge-*") are ignored, and
// the internals of git directories are left out unless
// o.IncludeGitInternals (Plan.LeftOut says which, and why).
func PlanFiles(ctx context.Context, base, theirs, ours string, changes []layer.Change, o PlanOptions) (*Plan, error) {
	if o.TextMerge && o.Scratch == "" {
		return nil, fmt.Errorf("merge: text merge needs a scratch directory: %w", tine.ErrInvalid)
	}
	p := &fsPlanner{
		ctx: ctx, opt: o,
		base: plan.NewView(base), theirs: plan.NewView(theirs), ours: plan.NewView(ours),
		byPath: map[string]*Entry{},
	}
	out := &Plan{Scope: "filesystem"}
	if len(o.Paths) > 0 {
		out.Scope = "paths"
	}
	sel := selectChanges(changes, o.Paths)
	if !o.IncludeGitInternals {
		var err error
		if sel, out.LeftOut, err = p.leaveOut(sel); err != nil {
			return nil, fmt.Errorf("merge: plan: %w", err)
		}
	}
	looks := make([]sides, len(sel))
	err := plan.InParallel(ctx, len(sel), func(i int) (err error) {
		looks[i], err = p.look(sel[i].Path)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("merge: plan: %w", err)
	}
	for i, c := range sel {
		e, err := p.entry(c, looks[i])
		if err != nil {
			return nil, fmt.Errorf("merge: plan %q: %w", c.Path, err)
		}
		out.Entries = append(out.Entries, e)
		p.byPath[e.Path] = &out.Entries[len(out.Entries)-1]
	}
	return out, nil
}

// selectChanges returns the changes to plan, sorted by path: all of them, or
// those at or under paths plus the directories the run created above them
// (which a write beneath needs; a directory the run deleted above them is
// not the paths' to delete).
func selectChanges(changes []layer.Change, paths []string) []layer.Change {
	var out []layer.Change
	kinds := map[string]layer.Change{}
	for _, c := range changes {
		kinds[c.Path] = c
	}
	picked := map[string]bool{}
	for _, c := range changes {
		if isStagingPath(c.Path) || (len(paths) > 0 && !underAny(c.Path, paths)) {
			continue
		}
		for d := path.Dir(c.Path); d != "."; d = path.Dir(d) {
			a, ok := kinds[d]
			if ok && !picked[d] && a.Type == "dir" && a.Kind != layer.Modified && a.Kind != layer.Deleted {
				picked[d] = true
				out = append(out, a)
			}
		}
		if !picked[c.Path] {
			picked[c.Path] = true
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b layer.Change) int { return cmpPath(a.Path, b.Path) })
	return out
}

// cmpPath orders slash paths as strings do, which puts a directory before
// everything beneath it.
func cmpPath(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// fsPlanner holds the state of one PlanFiles.
type fsPlanner struct {
	ctx                context.Context
	opt                PlanOptions
	base, theirs, ours *plan.View
	byPath             map[string]*Entry // entries planned so far
	textDir            string            // staging for text merges, made on first use
	texts              int               // text merges staged so far
}

// sides is what one path is on the three sides (nil where absent), and
// how ours compares with the others.
type sides struct {
	base, theirs, ours fs.FileInfo
	oursParent         plan.Parents // why ours is absent when a parent is no directory
	oursIsTheirs       bool         // same signature (or both absent)
	oursIsBase         bool
}

// entry plans change c, whose sides are s.
func (p *fsPlanner) entry(c layer.Change, s sides) (Entry, error) {
	e := Entry{Path: c.Path, Change: c.Kind, Type: typeOf(s, c)}
	switch {
	case s.oursIsTheirs:
		e.Action = Converged
		return e, nil
	case !s.oursIsBase:
		return p.bothChanged(e, s)
	}
	return p.take(e, s)
}

// look stats path rel on the three sides and compares ours with the others.
func (p *fsPlanner) look(rel string) (sides, error) {
	var s sides
	var err error
	if s.base, _, err = p.base.Lstat(rel); err != nil {
		return s, err
	}
	if s.theirs, _, err = p.theirs.Lstat(rel); err != nil {
		return s, err
	}
	if s.ours, s.oursParent, err = p.ours.Lstat(rel); err != nil {
		return s, err
	}
	if s.oursIsTheirs, err = plan.Same(rel, s.ours, s.theirs, p.ours, p.theirs); err != nil || s.oursIsTheirs {
		return s, err
	}
	s.oursIsBase, err = plan.Same(rel, s.ours, s.base, p.ours, p.base)
	return s, err
}

// typeOf names the path's type in the run, or its old type when deleted.
func typeOf(s sides, c layer.Change) string {
	switch {
	case s.theirs != nil:
		return layer.TypeOf(s.theirs.Mode())
	case s.base != nil:
		return layer.TypeOf(s.base.Mode())
	}
	return c.Type
}

// take plans taking the run's version of a path the target did not change.
func (p *fsPlanner) take(e Entry, s sides) (Entry, error) {
	if s.theirs == nil || !s.theirs.IsDir() {
		if reason, err := p.addedBelow(e.Path, s); err != nil || reason != "" {
			return conflict(e, reason), err
		}
	}
	if s.theirs == nil {
		e.Action = Take
		return e, nil
	}
	if reason := p.blockedParent(e.Path, s.oursParent); reason != "" {
		return conflict(e, reason), nil
	}
	if layer.TypeOf(s.theirs.Mode()) == "other" {
		return conflict(e, "special file (device, fifo or socket) in run cannot be merged"), nil
	}
	e.Action, e.Source, e.SourceRoot = Take, p.theirs.At(e.Path), p.theirs.Root()
	if !s.theirs.IsDir() {
		e.Bytes = s.theirs.Size()
	}
	return e, nil
}

// addedBelow returns a reason when the run removes directory rel (deletes
// it or changes its type) while the target has entries in it that base
// lacks: removing it would lose them.
func (p *fsPlanner) addedBelow(rel string, s sides) (string, error) {
	if s.base == nil || !s.base.IsDir() || s.ours == nil || !s.ours.IsDir() {
		return "", nil
	}
	names, err := plan.ReadDirNames(p.ours.At(rel))
	if err != nil {
		return "", err
	}
	for _, name := range names {
		if _, err := fstree.Lstat(filepath.Join(p.base.At(rel), name)); os.IsNotExist(err) {
			return fmt.Sprintf("directory removed in run, but target added %q in it", name), nil
		} else if err != nil {
			return "", err
		}
	}
	return "", nil
}

// blockedParent returns why a write of rel is impossible when ours has no
// directory at one of its parents (the shallowest is ps.At), or "" when the
// plan makes that parent and every one below it a directory first.
func (p *fsPlanner) blockedParent(rel string, ps plan.Parents) string {
	if ps.Kind == plan.ParentIsDir {
		return ""
	}
	for d := path.Dir(rel); d != path.Dir(ps.At); d = path.Dir(d) {
		pe, ok := p.byPath[d]
		switch {
		case ok && pe.Action == Conflict:
			return fmt.Sprintf("parent %q is in conflict", d)
		case !ok || pe.Action != Take || pe.Type != "dir":
			return ps.Reason()
		}
	}
	return ""
}

// conflict marks e as a conflict for reason.
func conflict(e Entry, reason string) Entry {
	e.Action, e.Reason, e.Source, e.SourceRoot, e.Bytes = Conflict, reason, "", "", 0
	return e
}

// bothChanged plans a path both sides changed differently: a conflict, or a
// text merge when asked for and possible.
func (p *fsPlanner) bothChanged(e Entry, s sides) (Entry, error) {
	if p.opt.TextMerge && isRegular(s.base) && isRegular(s.theirs) && isRegular(s.ours) {
		return p.textMerge(e, s)
	}
	return conflict(e, conflictReason(s)), nil
}

// isRegular reports whether fi describes a regular file.
func isRegular(fi fs.FileInfo) bool { return fi != nil && fi.Mode().IsRegular() }

// conflictReason says how the two sides disagree on a path.
func conflictReason(s sides) string {
	b, t, o := s.base, s.theirs, s.ours
	switch {
	case t == nil && o != nil && b != nil && o.Mode().Type() != b.Mode().Type():
		return "deleted in run, type changed in target"
	case t == nil:
		return "deleted in run, modified in target"
	case o == nil && s.oursParent.Kind != plan.ParentIsDir:
		return "modified in run; in target, " + s.oursParent.Reason()
	case o == nil:
		return "modified in run, deleted in target"
	case b == nil:
		return "added in both with different contents"
	case o.Mode().Type() != b.Mode().Type():
		return "type changed in target"
	case t.Mode().Type() != b.Mode().Type():
		return "type changed in run, modified in target"
	}
	return "changed in both"
}
