package engine

import (
	"context"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/layer"
)

// GroupReport is what a group of forks did, for a person to read or attach
// to a pull request: the fork point, each fork side by side with its
// changes and history, the recommendation, and the approvals asked for.
type GroupReport struct {
	Workspace   *tine.Workspace  `json:"workspace"`
	Group       *tine.Group      `json:"group"`
	Parent      *tine.Run        `json:"parent"`
	ForkPoint   *tine.Version    `json:"fork_point"`
	Comparison  *Comparison      `json:"comparison"`
	Forks       []ForkReport     `json:"forks"`
	Approvals   []*tine.Approval `json:"approvals"`
	GeneratedAt time.Time        `json:"generated_at"`
}

// ForkReport is one fork of a group report.
type ForkReport struct {
	Run     *tine.Run      `json:"run"`
	Changes []layer.Change `json:"changes"`
	Events  []*tine.Event  `json:"events"`
}

// Report gathers group ref's report.
func (e *Engine) Report(ctx context.Context, ref string) (*GroupReport, error) {
	c, err := e.Compare(ctx, ref)
	if err != nil {
		return nil, err
	}
	rep := &GroupReport{Group: c.Group, Comparison: c, Forks: []ForkReport{}, Approvals: []*tine.Approval{}, GeneratedAt: e.now().UTC()}
	err = e.store.View(ctx, func(tx tine.Tx) error {
		var err error
		if rep.Workspace, err = tx.Workspace(c.Group.Workspace); err != nil {
			return err
		}
		if rep.Parent, err = tx.Run(c.Group.Parent); err != nil {
			return err
		}
		if rep.ForkPoint, err = tx.Version(c.Group.Version); err != nil {
			return err
		}
		for _, f := range c.Forks {
			as, err := tx.Approvals(tine.ApprovalFilter{Run: f.Run.ID})
			if err != nil {
				return err
			}
			rep.Approvals = append(rep.Approvals, as...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, f := range c.Forks {
		fr := ForkReport{Run: f.Run, Changes: []layer.Change{}}
		if f.Run.Active() {
			if ch, err := e.Changes(ctx, Ref{rep.Workspace, f.Run}); err == nil {
				fr.Changes = ch
			}
		}
		fr.Events, _ = e.Events(ctx, tine.EventFilter{Run: f.Run.ID})
		rep.Forks = append(rep.Forks, fr)
	}
	return rep, nil
}
