package mcp

import (
	"context"
	"fmt"
	"time"

	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/layer"
)

// noCost is said plainly of forks that no fork-run made: tine measures
// only what a fork-run's agents spend.
const noCost = "no cost recorded"

const costNote = noCost + ": tine tracks tokens and money only for the forks of a fork-run (fork_run with prompt), and these are not. The evidence below is what the daemon has: what each fork changed."

// costEvidence is what the daemon knows of one fork.
type costEvidence struct {
	Run          string    `json:"run"`
	ID           string    `json:"id"`
	Approach     string    `json:"approach,omitempty"`
	State        string    `json:"state"`
	CreatedAt    time.Time `json:"created_at"`
	FilesChanged int       `json:"files_changed"`
	LinesAdded   int       `json:"lines_added"`
	LinesDeleted int       `json:"lines_deleted"`
}

func (t *tools) cost(ctx context.Context, in RunsInput) (*answer, error) {
	switch {
	case in.Group != "" && in.Run != "":
		return nil, inputErr("give group or run, not both")
	case in.Group != "":
		return t.groupCost(ctx, in.Group)
	}
	run, err := t.runOrSelf(in.Run)
	if err != nil {
		return nil, err
	}
	d, err := t.changes(ctx, run)
	if err != nil {
		return nil, err
	}
	ev := map[string]any{"run": d.Run.Name, "id": d.Run.ID, "created_at": d.Run.CreatedAt, "diff": layer.Summarize(d.Changes)}
	if d.Run.Group != "" {
		if rep, err := t.forkReport(ctx, d.Run.Group); err == nil && rep.Fork(d.Run.ID) != nil {
			return forkSpendAnswer(rep, rep.Fork(d.Run.ID), ev), nil
		}
	}
	return &answer{Note: costNote, Data: map[string]any{"cost": noCost, "evidence": ev}}, nil
}

func (t *tools) groupCost(ctx context.Context, group string) (*answer, error) {
	if group == "" {
		return nil, inputErr("group is required")
	}
	if rep, err := t.forkReport(ctx, group); err == nil {
		return budgetAnswer(rep), nil
	}
	// Not a fork-run's group (or a daemon without fork-runs): what the
	// comparison knows, or its error.
	c, err := t.comparison(ctx, group)
	if err != nil {
		return nil, err
	}
	ev := []costEvidence{}
	for _, f := range c.Forks {
		ev = append(ev, costEvidence{Run: f.Run.Name, ID: f.Run.ID, Approach: f.Run.Approach, State: string(f.Run.State),
			CreatedAt: f.Run.CreatedAt, FilesChanged: f.Changed, LinesAdded: f.LinesAdded, LinesDeleted: f.LinesDeleted})
	}
	return &answer{Note: costNote, Data: map[string]any{"cost": noCost, "group": c.Group.ID, "evidence": ev}}, nil
}

// budgetAnswer is cost of a fork-run's group.
func budgetAnswer(rep *forkrun.Report) *answer {
	v := rep.Spend()
	so := ""
	if rep.Outcome == forkrun.OutcomeRunning {
		so = " so far (it is running)"
	}
	note := fmt.Sprintf("fork-run %s spent $%.4f in all%s; caps: %s.", rep.Group, v.TotalUSD, so, v.Caps())
	return &answer{Note: note, Data: v}
}

// forkSpendAnswer is cost of one fork of a fork-run, with ev, the
// evidence of its changes.
func forkSpendAnswer(rep *forkrun.Report, f *forkrun.Fork, ev map[string]any) *answer {
	note := fmt.Sprintf("%s spent $%.4f (%s) in fork-run %s, whose forks spent $%.4f in all; caps: %s.",
		f.Name, f.CostUSD, f.State, rep.Group, rep.TotalUSD(), rep.Spend().Caps())
	return &answer{Note: note, Data: map[string]any{"run": f.Name, "id": f.Run, "state": f.State, "tokens": f.Agent.Tokens.Total(),
		"usd": f.CostUSD, "group": rep.Spend(), "evidence": ev}}
}
