package mcp

import (
	"context"
	"time"

	"github.com/tinehq/tine/layer"
)

// noCost is said plainly: tine does not measure what a fork costs yet.
const noCost = "no cost recorded"

const costNote = noCost + ": tine does not track tokens, time or money per run yet. The evidence below is what the daemon has: what each fork changed."

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

func (t *tools) cost(ctx context.Context, in BranchesInput) (*answer, error) {
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
	return &answer{Note: costNote, Data: map[string]any{"cost": noCost, "evidence": ev}}, nil
}

func (t *tools) groupCost(ctx context.Context, group string) (*answer, error) {
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
