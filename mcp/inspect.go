package mcp

import (
	"context"
	"fmt"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/layer"
)

// Bounds of what one answer carries.
const (
	maxPatch   = 64 << 10 // bytes of a patch
	maxChanges = 500      // changed paths listed
)

func (t *tools) listRuns(ctx context.Context, in ListInput) (*answer, error) {
	rows, err := t.lineage(ctx, in.Run)
	if err != nil {
		return nil, err
	}
	return &answer{Note: fmt.Sprintf("%d live run(s).", len(rows)), Data: map[string]any{"runs": rows}}, nil
}

// lineage lists run ref and its direct forks (GET /v1/runs, narrowed);
// with no ref, every live run the caller may see: from inside a run, itself
// and its direct forks.
func (t *tools) lineage(ctx context.Context, ref string) ([]httpapi.RunRow, error) {
	rows, err := t.api.Runs(ctx, "", false)
	if err != nil {
		return nil, unreachable(err)
	}
	if ref == "" {
		return rows, nil
	}
	ps, err := t.api.PS(ctx, ref)
	if err != nil {
		return nil, unreachable(err)
	}
	out := []httpapi.RunRow{}
	for _, r := range rows {
		if r.ID == ps.Run.ID || r.Parent == ps.Run.ID {
			out = append(out, r)
		}
	}
	return out, nil
}

func (t *tools) compare(ctx context.Context, in GroupInput) (*answer, error) {
	c, err := t.comparison(ctx, in.Group)
	if err != nil {
		return nil, err
	}
	return &answer{Note: fmt.Sprintf("group %s: %d fork(s). %s", c.Group.ID, len(c.Forks), c.Rationale), Data: c}, nil
}

// comparison is GET /v1/groups/{group}/compare.
func (t *tools) comparison(ctx context.Context, group string) (*engine.Comparison, error) {
	if group == "" {
		return nil, inputErr("group is required")
	}
	c, err := t.api.Compare(ctx, group)
	return c, unreachable(err)
}

func (t *tools) changes(ctx context.Context, run string) (*httpapi.Diff, error) {
	if run == "" {
		return nil, inputErr("run is required")
	}
	d, err := t.api.Diff(ctx, run)
	return d, unreachable(err)
}

func (t *tools) diff(ctx context.Context, in DiffInput) (*answer, error) {
	if in.Patch {
		return t.patch(ctx, in.Run)
	}
	d, err := t.changes(ctx, in.Run)
	if err != nil {
		return nil, err
	}
	note := fmt.Sprintf("%s changed %d path(s) since its fork point.", d.Run.Name, len(d.Changes))
	list := d.Changes
	if len(list) > maxChanges {
		list = list[:maxChanges]
		note += fmt.Sprintf(" Only the first %d are listed.", maxChanges)
	}
	return &answer{Note: note, Data: map[string]any{"run": d.Run.Name, "stat": layer.Summarize(d.Changes), "changes": list}}, nil
}

func (t *tools) patch(ctx context.Context, run string) (*answer, error) {
	if run == "" {
		return nil, inputErr("run is required")
	}
	text, size, err := t.api.Patch(ctx, run, maxPatch)
	if err != nil {
		return nil, unreachable(err)
	}
	switch {
	case size == 0:
		return &answer{Note: fmt.Sprintf("%s changed no text file since its fork point.", run)}, nil
	case size > int64(len(text)):
		note := fmt.Sprintf("The patch of %s is %d bytes; only the first %d follow (call without patch for every changed path).", run, size, len(text))
		return &answer{Note: note, Text: text}, nil
	}
	return &answer{Text: text}, nil
}

// ps is tine ps, with how many paths the run changed.
func (t *tools) ps(ctx context.Context, in RunInput) (*answer, error) {
	if in.Run == "" {
		return nil, inputErr("run is required")
	}
	ps, err := t.api.PS(ctx, in.Run)
	if err != nil {
		return nil, unreachable(err)
	}
	d, err := t.changes(ctx, ps.Run.ID)
	if err != nil {
		return nil, err
	}
	note := fmt.Sprintf("%s (%s, %s): %s; %d path(s) changed since its fork point.",
		ps.Run.Name, ps.Run.ID, ps.Run.Role, ps.State, len(d.Changes))
	return &answer{Note: note, Data: map[string]any{"ps": ps, "diff": layer.Summarize(d.Changes)}}, nil
}

// summary is tine summary: one fork of a fork-run, its evidence and
// readiness.
func (t *tools) summary(ctx context.Context, in RunInput) (*answer, error) {
	if in.Run == "" {
		return nil, inputErr("run is required")
	}
	s, err := t.api.Summary(ctx, in.Run)
	if err != nil {
		return nil, unreachable(err)
	}
	ready := "ready to merge"
	if !s.Ready {
		ready = "not ready: " + s.NotReady
	}
	note := fmt.Sprintf("%s (group %s, run %s): %s", s.Run, s.Group, s.RunState, s.Fork.State)
	if s.Fork.Reason != "" {
		note += " (" + s.Fork.Reason + ")"
	}
	note += "; " + ready + "."
	return &answer{Note: note, Data: s}, nil
}
