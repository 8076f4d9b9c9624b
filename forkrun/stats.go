package forkrun

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/grouprec"
)

// Tally counts how fork-run groups were resolved against their judge's
// recommendation.
type Tally struct {
	Groups int `json:"groups"` // fork-run groups resolved
	// Automatic were merged by fork-run itself (merge mode auto or vote):
	// no person chose.
	Automatic int `json:"automatic"`
	// Confirmed: a person chose the recommended fork; Overridden: another
	// fork; Rejected: none, discarding them all, though one was
	// recommended; Unrecommended: a person decided where the judge named
	// no winner.
	Confirmed     int `json:"confirmed"`
	Overridden    int `json:"overridden"`
	Rejected      int `json:"rejected"`
	Unrecommended int `json:"unrecommended"`
	// Agreement is Confirmed over Confirmed + Overridden + Rejected; 0
	// when a person decided none of those.
	Agreement float64 `json:"agreement"`
}

// JudgeStats is Tally per judge and per week.
type JudgeStats struct {
	All    Tally            `json:"all"`
	Judges map[string]Tally `json:"judges"` // by judge kind
	Weeks  []WeekTally      `json:"weeks"`  // oldest first
	// Weights are each workspace's heuristic weights, by workspace name
	// (control.Plane.WeightsOf); Stats leaves them unset.
	Weights map[string]control.LearnedWeights `json:"weights,omitempty"`
}

// WeekTally is the Tally of the groups resolved in one ISO week.
type WeekTally struct {
	Week string `json:"week"` // e.g. 2026-W48
	Tally
}

// Stats tallies the fork-run groups among history's lines (other lines,
// of groups forked by hand, are skipped).
func Stats(history []grouprec.Resolution) JudgeStats {
	st := JudgeStats{Judges: map[string]Tally{}}
	weeks := map[string]*Tally{}
	for _, h := range history {
		var s Summary
		if len(h.ForkRun) == 0 || json.Unmarshal(h.ForkRun, &s) != nil {
			continue
		}
		y, w := h.Time.ISOWeek()
		week := fmt.Sprintf("%d-W%02d", y, w)
		if weeks[week] == nil {
			weeks[week] = &Tally{}
		}
		j := st.Judges[s.Judge]
		for _, t := range []*Tally{&st.All, &j, weeks[week]} {
			t.add(h, &s)
		}
		st.Judges[s.Judge] = j
	}
	st.All.settle()
	for k, j := range st.Judges {
		j.settle()
		st.Judges[k] = j
	}
	for week, t := range weeks {
		t.settle()
		st.Weeks = append(st.Weeks, WeekTally{Week: week, Tally: *t})
	}
	sort.Slice(st.Weeks, func(i, k int) bool { return st.Weeks[i].Week < st.Weeks[k].Week })
	return st
}

// add counts one resolved group.
func (t *Tally) add(h grouprec.Resolution, s *Summary) {
	t.Groups++
	switch {
	case s.Outcome == OutcomeMerged:
		t.Automatic++
	case s.Winner == "":
		t.Unrecommended++
	case h.Chosen == s.Winner:
		t.Confirmed++
	case h.Chosen != "":
		t.Overridden++
	default:
		t.Rejected++
	}
}

func (t *Tally) settle() {
	if n := t.Confirmed + t.Overridden + t.Rejected; n > 0 {
		t.Agreement = round6(float64(t.Confirmed) / float64(n))
	}
}

// JudgeStatsOf is Stats of the state directory of e, counting only the
// groups of the workspaces mayUse keeps (nil: all), with those workspaces'
// weights: what tine judge stats shows a person, every workspace for root,
// their own through the daemon for a normal user.
func JudgeStatsOf(ctx context.Context, e *engine.Engine, mayUse func(*tine.Workspace) bool) (JudgeStats, error) {
	var wss []*tine.Workspace
	if err := e.Store().View(ctx, func(tx tine.Tx) (err error) {
		wss, err = tx.Workspaces()
		return err
	}); err != nil {
		return JudgeStats{}, err
	}
	if mayUse != nil {
		wss = slices.DeleteFunc(wss, func(w *tine.Workspace) bool { return !mayUse(w) })
	}
	h, err := grouprec.HistoryIn(e.Layout()).Read()
	if err != nil {
		return JudgeStats{}, err
	}
	if mayUse != nil {
		mine := map[string]bool{}
		for _, w := range wss {
			mine[w.ID] = true
		}
		h = slices.DeleteFunc(h, func(r grouprec.Resolution) bool { return !mine[r.Workspace] })
	}
	st := Stats(h)
	st.Weights = control.Of(e).WeightsOf(wss)
	return st, nil
}
