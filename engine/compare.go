package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aymanbagabas/go-udiff"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/grouprec"
	"github.com/tinehq/tine/layer"
)

// ForkSummary is one fork's evidence in a comparison, of its Work.
type ForkSummary struct {
	Run          *tine.Run `json:"run"`
	Changed      int       `json:"files_changed"` // files of its work: Work.Files
	LinesAdded   int       `json:"lines_added"`
	LinesDeleted int       `json:"lines_deleted"`
	// Ready is tine's one readiness as far as the engine can tell it: the
	// fork is live, its work holds real changes, and it merges cleanly
	// into its parent. A fork-run's fork must besides have finished with
	// its tests passed (or none configured): forkrun.Readiness.
	Ready    bool   `json:"ready"`
	NotReady string `json:"reason,omitempty"` // why not, when not ready
	// MergesCleanly says that its merge into its parent plans without a
	// conflict, whatever else it lacks to be ready.
	MergesCleanly bool     `json:"merges_cleanly"`
	Conflicts     []string `json:"conflicts,omitempty"`
	Scope         string   `json:"merge_scope,omitempty"`
}

// NoChanges is the reason a fork whose work holds no change is not ready.
const NoChanges = "no changes: the fork's work holds no change (byproducts such as caches and .git internals are not work)"

// Comparison sets a group's forks side by side.
type Comparison struct {
	Group       *tine.Group   `json:"group"`
	Forks       []ForkSummary `json:"forks"`
	Recommended string        `json:"recommended,omitempty"` // run id
	Rationale   string        `json:"rationale"`
	// Verdict is the judge's stored verdict, when a fork-run judged the
	// group; it then makes the recommendation.
	Verdict *grouprec.Verdict `json:"verdict,omitempty"`
}

// Compare gathers each fork of group ref: its work (Work), whether it is
// ready (live, with changes, and a clean merge into its parent), and a
// heuristic recommendation: the ready fork with the smallest diff.
func (e *Engine) Compare(ctx context.Context, ref string) (*Comparison, error) {
	g, runs, err := e.findGroup(ctx, ref)
	if err != nil {
		return nil, err
	}
	unlock, err := e.LockWorkspace(g.Workspace)
	if err != nil {
		return nil, err
	}
	defer unlock()
	w, err := e.FindWorkspace(ctx, g.Workspace)
	if err != nil {
		return nil, err
	}
	c := &Comparison{Group: g}
	rec := grouprec.Open(e.lay.Group(g.Workspace, g.ID))
	forkRun := rec.Forks()
	for _, r := range runs {
		s := e.summarize(ctx, Ref{w, r})
		if f, ok := forkRun[r.ID]; ok {
			narrowReady(&s, f)
		}
		c.Forks = append(c.Forks, s)
	}
	c.recommend()
	if v := rec.Verdict(); v != nil {
		c.Verdict, c.Rationale = v, v.Judge+" judge: "+v.Rationale
		c.Recommended = v.Winner
	}
	return c, nil
}

// Group returns group ref and its runs, without comparing them.
func (e *Engine) Group(ctx context.Context, ref string) (*tine.Group, []*tine.Run, error) {
	return e.findGroup(ctx, ref)
}

func (e *Engine) findGroup(ctx context.Context, ref string) (*tine.Group, []*tine.Run, error) {
	var g *tine.Group
	var runs []*tine.Run
	err := e.store.View(ctx, func(tx tine.Tx) error {
		var err error
		if g, err = tx.Group(ref); err != nil {
			return fmt.Errorf("no group %q (fork prints its id; see tine tree): %w", ref, tine.ErrNotFound)
		}
		runs, err = tx.Runs(tine.RunFilter{Group: g.ID})
		return err
	})
	return g, runs, err
}

func (e *Engine) summarize(ctx context.Context, r Ref) ForkSummary {
	s := ForkSummary{Run: r.Run}
	if !r.Run.Active() {
		s.NotReady = "run is " + string(r.Run.State)
		return s
	}
	if _, err := e.mergeTarget(ctx, r, ""); err != nil {
		s.NotReady = err.Error()
		return s
	}
	w, err := e.Work(ctx, r)
	if err != nil {
		s.NotReady = "merge check failed: " + err.Error()
		return s
	}
	s.Changed, s.Scope = w.Files(), w.Scope
	err = e.withOrigin(ctx, r, func(be layer.Backend, br layer.Run, base []string) error {
		dir, release, err := be.Read(ctx, base, filepath.Join(br.Dir, "compare-"+tine.NewID("")))
		if err != nil {
			return err
		}
		defer release()
		s.LinesAdded, s.LinesDeleted = lineCounts(w.Changes, dir, br.View)
		return nil
	})
	if err != nil {
		s.NotReady = err.Error()
		return s
	}
	checkReady(w, &s)
	return s
}

// checkReady says from fork's work w whether it is ready: changes, and a
// clean merge into its parent.
func checkReady(w *Work, s *ForkSummary) {
	for _, c := range w.Plan.Conflicts() {
		s.Conflicts = append(s.Conflicts, c.Path)
	}
	s.MergesCleanly = w.MergesCleanly()
	switch {
	case len(s.Conflicts) > 0:
		s.NotReady = fmt.Sprintf("%d merge conflict(s) with %s", len(s.Conflicts), w.Target.Name)
	case s.Changed == 0:
		s.NotReady = NoChanges
	default:
		s.Ready = true
	}
}

// narrowReady makes s, a fork of a fork-run, ready only if fork-run
// found it ready too (finished, tests passed or none configured, ...): a
// fork whose tests failed is not ready, however cleanly it merges. A fork
// fork-run has not weighed yet (it weighs each once, from this
// comparison, when its agents are done) is left as the engine sees it.
func narrowReady(s *ForkSummary, f grouprec.ForkReadiness) {
	if s.Ready && !f.Ready && f.NotReady != "" {
		s.Ready, s.NotReady = false, f.NotReady
	}
}

// recommend picks, as a heuristic, the ready fork with the smallest diff.
func (c *Comparison) recommend() {
	var ready []ForkSummary
	for _, f := range c.Forks {
		if f.Ready {
			ready = append(ready, f)
		}
	}
	if len(ready) == 0 {
		c.Rationale = "heuristic: no fork is ready with changes to merge"
		return
	}
	sort.SliceStable(ready, func(i, j int) bool {
		return ready[i].LinesAdded+ready[i].LinesDeleted < ready[j].LinesAdded+ready[j].LinesDeleted
	})
	best := ready[0]
	c.Recommended = best.Run.ID
	c.Rationale = fmt.Sprintf("heuristic: %s is the smallest ready diff (%d file(s), +%d -%d lines) of %d ready fork(s); no tests were recorded",
		best.Run.Name, best.Changed, best.LinesAdded, best.LinesDeleted, len(ready))
}

// lineCounts adds up the lines added and deleted in changed text files.
func lineCounts(changes []layer.Change, oldDir, newDir string) (added, deleted int) {
	oldRoot, newRoot, done, err := openRoots(oldDir, newDir)
	if err != nil {
		return 0, 0
	}
	defer done()
	for _, c := range changes {
		if c.Type != "file" && c.Kind != layer.Deleted {
			continue
		}
		old, err1 := readText(oldRoot, c.Path, c.Kind != layer.Added)
		cur, err2 := readText(newRoot, c.Path, c.Kind != layer.Deleted)
		if err1 != nil || err2 != nil {
			continue
		}
		for _, line := range strings.Split(udiff.Unified("a", "b", old, cur), "\n") {
			switch {
			case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
			case strings.HasPrefix(line, "+"):
				added++
			case strings.HasPrefix(line, "-"):
				deleted++
			}
		}
	}
	return added, deleted
}

// ChooseResult says how a group was resolved.
type ChooseResult struct {
	Chosen    *tine.Run      `json:"chosen,omitempty"`
	Merge     *MergeResult   `json:"merge,omitempty"`
	Promote   *PromoteResult `json:"promote,omitempty"`
	Discarded []*tine.Run    `json:"discarded"`
}

// ChooseOptions says how Choose keeps the chosen run.
type ChooseOptions struct {
	Promote   bool `json:"promote"`              // promote it rather than merge it into its parent
	NoCommits bool `json:"no_commits,omitempty"` // merging, squash its commits (MergeOptions.NoCommits)
}

// Choose resolves group ref with run: by merging it into its parent, or by
// promoting it. Only once that succeeded are the group's other live runs
// discarded. An empty run discards the whole group.
func (e *Engine) Choose(ctx context.Context, ref, run string, o ChooseOptions) (*ChooseResult, error) {
	g, runs, err := e.findGroup(ctx, ref)
	if err != nil {
		return nil, err
	}
	res := &ChooseResult{}
	if run != "" {
		chosen, err := e.chosenRun(ctx, g, runs, run)
		if err != nil {
			return nil, err
		}
		res.Chosen = chosen
		if o.Promote {
			res.Promote, err = e.Promote(ctx, chosen.ID, false)
		} else {
			res.Merge, err = e.Merge(ctx, chosen.ID, MergeOptions{NoCommits: o.NoCommits})
		}
		if err != nil {
			return res, err
		}
	}
	for _, r := range runs {
		if r.Active() && (res.Chosen == nil || r.ID != res.Chosen.ID) {
			d, err := e.Discard(ctx, r.ID, true)
			res.Discarded = append(res.Discarded, d...)
			if err != nil {
				return res, err
			}
		}
	}
	err = e.store.Update(ctx, func(tx tine.Tx) error {
		detail := map[string]any{"group": g.ID, "promote": o.Promote, "discarded": len(res.Discarded)}
		runID := ""
		if res.Chosen != nil {
			runID = res.Chosen.ID
		}
		return tx.AppendEvent(e.event(g.Workspace, runID, tine.EventChoose, detail))
	})
	if err != nil {
		return res, err
	}
	return res, e.recordResolution(g, runName(ctx, e.store, g.Parent), res, o.Promote)
}

func (e *Engine) chosenRun(ctx context.Context, g *tine.Group, runs []*tine.Run, ref string) (*tine.Run, error) {
	for _, m := range runs { // a bare name is unambiguous within its group
		if m.ID == ref || m.Name == ref {
			return m, nil
		}
	}
	r, err := e.FindRun(ctx, ref)
	if err != nil {
		return nil, err
	}
	for _, m := range runs {
		if m.ID == r.Run.ID {
			return m, nil
		}
	}
	return nil, fmt.Errorf("%s is not in group %s: %w", r.Run.Name, g.ID, tine.ErrInvalid)
}
