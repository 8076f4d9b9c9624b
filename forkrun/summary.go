package forkrun

import (
	"context"
	"fmt"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/egress"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/evidence"
)

// RunSummary is what tine summary shows: one fork's stored evidence and its
// readiness now.
type RunSummary struct {
	Run       string     `json:"run"`
	Group     string     `json:"group"`
	RunState  tine.State `json:"run_state"` // active, merged, discarded, ...
	Fork      *Fork      `json:"fork"`
	Ready     bool       `json:"ready"`
	NotReady  string     `json:"not_ready,omitempty"`
	Winner    bool       `json:"winner"`
	Score     *float64   `json:"score,omitempty"`
	Outcome   string     `json:"group_outcome"`
	Resolved  string     `json:"group_resolved,omitempty"` // "merge source-2", "discard", once resolved
	Rationale string     `json:"rationale,omitempty"`
	// Refused is what the fork's egress policy refused: connections and
	// names, each once.
	Refused []egress.Record `json:"refused,omitempty"`
}

// Summarize gathers the RunSummary of run ref, a fork of a fork-run: its
// report's record, and for a live fork not yet resolved its merge into
// its parent checked again (the source may have moved since).
func Summarize(ctx context.Context, e Host, ref string) (*RunSummary, error) {
	r, err := e.FindRun(ctx, ref)
	if err != nil {
		return nil, err
	}
	if r.Run.Group == "" {
		return nil, fmt.Errorf("%s is not a fork (it has no group): %w", r.Run.Name, tine.ErrInvalid)
	}
	rep, err := Load(e, r.Workspace.ID, r.Run.Group)
	if err != nil {
		return nil, err
	}
	f := rep.Fork(r.Run.ID)
	if f == nil {
		return nil, fmt.Errorf("%s is not in fork-run %s: %w", r.Run.Name, rep.Group, tine.ErrNotFound)
	}
	s := &RunSummary{Run: r.Run.Name, Group: rep.Group, RunState: r.Run.State, Fork: f, Ready: f.Ready,
		NotReady: f.NotReady, Winner: rep.Winner == f.Name, Outcome: rep.Outcome}
	s.Refused, _ = e.Refusals(ctx, r.Run.ID)
	if v := rep.Verdict; v != nil {
		if sc, ok := v.Scores[f.Run]; ok {
			s.Score = &sc
		}
		s.Rationale = v.Rationale
	}
	if r.Run.Active() && r.Run.Resolution == "" && f.Ready {
		c, err := e.Compare(ctx, rep.Group)
		if err != nil {
			return nil, err
		}
		for _, fs := range c.Forks {
			if fs.Run.ID == f.Run && !fs.Ready {
				s.Ready, s.NotReady = false, fs.NotReady
			}
		}
	}
	switch {
	case !r.Run.Active():
		s.Ready, s.NotReady = false, "run is "+string(r.Run.State)
	case r.Run.Resolution != "":
		s.Ready, s.NotReady = false, "already "+string(r.Run.Resolution)
	}
	if h := rep.Resolution; h != nil {
		s.Resolved = h.Action
		if h.Chosen != "" {
			s.Resolved += " " + h.Chosen
		}
	}
	return s, nil
}

// Export is what tine export reports of a group: the engine's report with
// the evidence its fork-run gathered for each fork, by fork name.
type Export struct {
	*engine.GroupReport
	Evidence map[string]*evidence.Fork `json:"evidence,omitempty"` // by fork name
}

// ExportGroup makes the Export of group ref.
func ExportGroup(ctx context.Context, e Host, ref string) (*Export, error) {
	rep, err := e.Report(ctx, ref)
	if err != nil {
		return nil, err
	}
	x := &Export{GroupReport: rep}
	if fr, err := Load(e, rep.Workspace.ID, rep.Group.ID); err == nil {
		x.Evidence = map[string]*evidence.Fork{}
		for _, f := range fr.Forks {
			if f.Evidence != nil {
				x.Evidence[f.Name] = f.Evidence
			}
		}
	}
	return x, nil
}
