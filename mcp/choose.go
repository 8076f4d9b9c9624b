package mcp

import (
	"context"
	"fmt"
	"strings"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/httpapi"
)

// choose resolves group in.Group with in.Run: POST choose, or for a dry
// run, the chosen fork's merge plan and the forks that would be discarded.
func (t *tools) choose(ctx context.Context, in ChooseInput) (*answer, error) {
	if in.Group == "" || in.Run == "" {
		return nil, inputErr("choose needs group and run (the group's fork to keep)")
	}
	if in.DryRun == nil || *in.DryRun {
		return t.chooseDry(ctx, in)
	}
	res, p, err := t.api.Choose(ctx, in.Group, httpapi.ChooseRequest{Run: in.Run, Promote: in.Promote})
	if a, err := asked(p, err); a != nil || err != nil {
		return a, conflictHint(err)
	}
	how := "merged into its parent"
	if res.Promote != nil {
		how = "promoted to source"
	}
	note := fmt.Sprintf("kept %s (%s); discarded %s.", res.Chosen.Name, how, names(res.Discarded))
	return &answer{Note: note, Data: res}, nil
}

func (t *tools) chooseDry(ctx context.Context, in ChooseInput) (*answer, error) {
	c, err := t.comparison(ctx, in.Group)
	if err != nil {
		return nil, err
	}
	chosen, others := pick(c, in.Run)
	if chosen == nil {
		return nil, fmt.Errorf("run %s is not a fork of group %s: %w", in.Run, in.Group, tine.ErrNotFound)
	}
	var plan *answer
	if in.Promote {
		plan, err = t.promote(ctx, chosen.ID, true)
	} else {
		plan, err = t.merge(ctx, chosen.ID, "", true)
	}
	if err != nil {
		return nil, err
	}
	note := fmt.Sprintf("%s Then the group's other forks would be discarded: %s.", plan.Note, names(others))
	return &answer{Note: note, Data: map[string]any{"dry_run": true, "chosen": chosen.Name,
		"plan": plan.Data, "would_discard": names(others)}}, nil
}

// pick finds run ref among the group's forks (by id, name or
// WORKSPACE/NAME) and the group's other live forks.
func pick(c *engine.Comparison, ref string) (chosen *tine.Run, others []*tine.Run) {
	for _, f := range c.Forks {
		r := f.Run
		switch {
		case r.ID == ref || r.Name == ref || strings.HasSuffix(ref, "/"+r.Name):
			chosen = r
		case r.Active():
			others = append(others, r)
		}
	}
	return chosen, others
}
