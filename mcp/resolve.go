package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/merge"
)

// asked is the answer to an action asked from inside a run that now waits
// for a person (p, a 202), or nil when the action was done; err is the
// action's error, with how to reach the daemon when it cannot be reached.
func asked(p *httpapi.Pending, err error) (*answer, error) {
	if err != nil {
		return nil, unreachable(err)
	}
	if p != nil {
		return pendingAnswer(p)
	}
	return nil, nil
}

// pending is an approval as the agent is told of it (without its
// evidence, which the person is shown).
type pending struct {
	Approval  string          `json:"approval"`
	Action    tine.Action     `json:"action"`
	Run       string          `json:"run,omitempty"`
	Group     string          `json:"group,omitempty"`
	Args      json.RawMessage `json:"args,omitempty"`
	ExpiresAt time.Time       `json:"expires_at"`
	Approve   string          `json:"approve_with"`
}

func pendingAnswer(p *httpapi.Pending) (*answer, error) {
	if p.Approval == nil {
		return nil, fmt.Errorf("the daemon answered 202 without a pending approval")
	}
	a := p.Approval
	cmd := "tine approve " + a.ID
	note := fmt.Sprintf("Not done: the %s is pending as approval %s. A person must approve it with `%s` (or refuse it); nothing changes until then.",
		a.Action, a.ID, cmd)
	return &answer{Note: note, Data: pending{Approval: a.ID, Action: a.Action, Run: a.Run, Group: a.Group,
		Args: a.Args, ExpiresAt: a.ExpiresAt, Approve: cmd}}, nil
}

// mergeRun is the merge tool: a run merged into its parent (or into), or
// promoted.
func (t *tools) mergeRun(ctx context.Context, in MergeInput) (*answer, error) {
	dry := in.DryRun == nil || *in.DryRun
	switch {
	case in.Run == "":
		return nil, inputErr("run is required")
	case in.Promote && in.Into != "":
		return nil, inputErr("into does not go with promote")
	case in.Promote:
		return t.promote(ctx, in.Run, dry)
	}
	return t.merge(ctx, in.Run, in.Into, dry)
}

func (t *tools) merge(ctx context.Context, run, into string, dry bool) (*answer, error) {
	res, p, err := t.api.Merge(ctx, run, httpapi.MergeRequest{Into: into, DryRun: dry})
	if a, err := asked(p, err); a != nil || err != nil {
		return a, conflictHint(err)
	}
	return mergeReport(res), nil
}

// conflictHint adds where to look when a merge plan has conflicts (the
// API's answer holds the plan, which httpapi.Client does not return).
func conflictHint(err error) error {
	if errors.Is(err, merge.ErrConflict) {
		return fmt.Errorf("%w (diff shows the run's changes; the target changed the same paths)", err)
	}
	return err
}

// mergeOut is a merge plan as merge reports it.
type mergeOut struct {
	Run     string          `json:"run"`
	Target  string          `json:"target"`
	DryRun  bool            `json:"dry_run"`
	Applied bool            `json:"applied"`
	Counts  map[string]int  `json:"counts"`
	Entries []merge.Entry   `json:"entries"`
	LeftOut []merge.LeftOut `json:"left_out,omitempty"`
}

func mergeReport(res *engine.MergeResult) *answer {
	out := mergeOut{Run: res.Run.Name, Target: res.Target.Name, DryRun: res.DryRun, Applied: res.Applied,
		Counts: map[string]int{}, Entries: res.Plan.Entries, LeftOut: res.Plan.LeftOut}
	for _, e := range res.Plan.Entries {
		out.Counts[string(e.Action)]++
	}
	note := fmt.Sprintf("merged %s into %s: %d path(s) written.", out.Run, out.Target, len(out.Entries))
	if res.DryRun {
		note = fmt.Sprintf("Dry run: merging %s into %s would touch %d path(s); nothing was written. Call again with dry_run false to apply.",
			out.Run, out.Target, len(out.Entries))
	}
	if n := len(out.LeftOut); n > 0 {
		note += fmt.Sprintf(" %d path(s) of the repository's internals (.git hooks, config) are left out: only a person carries them (tine merge --include-git-internals).", n)
		out.LeftOut = out.LeftOut[:min(n, maxChanges)]
	}
	if len(out.Entries) > maxChanges {
		out.Entries = out.Entries[:maxChanges]
		note += fmt.Sprintf(" Only the first %d paths are listed.", maxChanges)
	}
	return &answer{Note: note, Data: out}
}

func (t *tools) promote(ctx context.Context, run string, dry bool) (*answer, error) {
	if dry {
		d, err := t.changes(ctx, run)
		if err != nil {
			return nil, err
		}
		note := fmt.Sprintf("Dry run: promoting %s makes it the workspace's source (its files at the workspace path; the old source retires, kept as a version). Call again with dry_run false to do it.", d.Run.Name)
		return &answer{Note: note, Data: map[string]any{"run": d.Run.Name, "dry_run": true, "diff": layer.Summarize(d.Changes)}}, nil
	}
	res, p, err := t.api.Promote(ctx, run, httpapi.PromoteRequest{})
	if a, err := asked(p, err); a != nil || err != nil {
		return a, err
	}
	return &answer{Note: fmt.Sprintf("promoted %s: it is the source now.", res.Run.Name), Data: res}, nil
}

func (t *tools) discard(ctx context.Context, in DiscardInput) (*answer, error) {
	if in.Run == "" {
		return nil, inputErr("run is required")
	}
	res, p, err := t.api.Discard(ctx, in.Run, httpapi.DiscardRequest{Force: in.Force})
	if a, err := asked(p, err); a != nil || err != nil {
		return a, err
	}
	return &answer{Note: "discarded " + names(res.Discarded) + ".", Data: res}, nil
}

func (t *tools) rollback(ctx context.Context, in RollbackInput) (*answer, error) {
	if in.Run == "" || in.To == "" {
		return nil, inputErr("rollback needs run and to (a version id or label)")
	}
	res, p, err := t.api.Rollback(ctx, in.Run, httpapi.RollbackRequest{To: in.To})
	if a, err := asked(p, err); a != nil || err != nil {
		return a, err
	}
	note := fmt.Sprintf("rolled %s back to version %s; its files before are kept as version %s.", res.Run.Name, res.To.ID, res.Saved.ID)
	return &answer{Note: note, Data: res}, nil
}

// names lists runs by name.
func names(runs []*tine.Run) string {
	if len(runs) == 0 {
		return "nothing"
	}
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.Name
	}
	return strings.Join(out, ", ")
}
