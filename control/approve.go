package control

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/approval"
	"github.com/tinehq/tine/engine"
)

// Readiness summarises what a person approves a resolution of run r on:
// its changed paths, their kinds and sizes. If the run changes after the
// offer, an approval of it is stale.
func (p *Plane) Readiness(ctx context.Context, r engine.Ref) string {
	ch, err := p.e.Changes(ctx, r)
	if err != nil {
		return "unknown: " + err.Error()
	}
	h := sha256.New()
	for _, c := range ch {
		fmt.Fprintf(h, "%s\x00%s\x00%d\n", c.Path, c.Kind, c.Size)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Resolution is a resolution asked for from inside a run, waiting for a
// person.
type Resolution struct {
	Action tine.Action     `json:"action"`
	Run    string          `json:"run"`             // the run resolved (a group's chosen run for choose)
	Group  string          `json:"group,omitempty"` // for choose
	Args   json.RawMessage `json:"args,omitempty"`  // the API request body
}

// RequestResolution records res, asked for by run actor, as a pending
// approval with the evidence a person needs: the run's changes and, for a
// merge, the dry-run plan.
func (p *Plane) RequestResolution(ctx context.Context, actor engine.Ref, res Resolution) (*tine.Approval, error) {
	r, err := p.e.FindRun(ctx, res.Run)
	if err != nil {
		return nil, err
	}
	evidence := map[string]any{}
	if ch, err := p.e.Changes(ctx, r); err == nil {
		evidence["changes"] = ch
	}
	if res.Action == tine.ActionMerge {
		var o engine.MergeOptions
		json.Unmarshal(res.Args, &o)
		o.DryRun = true
		if plan, err := p.e.Merge(ctx, r.Run.ID, o); plan != nil {
			evidence["plan"] = plan.Plan
			if err != nil {
				evidence["plan_error"] = err.Error()
			}
		}
	}
	ev, _ := json.Marshal(evidence)
	a := &tine.Approval{Workspace: r.Workspace.ID, Run: r.Run.ID, Group: res.Group, Action: res.Action, Args: res.Args,
		Evidence: ev, Fingerprint: approval.Fingerprint(r.Run, p.Readiness(ctx, r)), RequestedBy: actor.Run.ID}
	if err := approval.Request(ctx, p.e.Store(), a, p.now()); err != nil {
		return nil, err
	}
	return a, nil
}

// Approved is what running an approved resolution did.
type Approved struct {
	Approval *tine.Approval `json:"approval"`
	Result   any            `json:"result"`
}

// Approve records a person's approval of pending approval id and runs its
// action at once: the approval is consumed only if the run is still as it
// was when the approval was offered.
func (p *Plane) Approve(ctx context.Context, id, by string) (*Approved, error) {
	now := p.now()
	a, err := approval.Approve(ctx, p.e.Store(), id, by, now)
	if err != nil {
		return nil, err
	}
	r, err := p.e.FindRun(ctx, a.Run)
	if err != nil {
		return nil, err
	}
	fp := approval.Fingerprint(r.Run, p.approvalReadiness(ctx, r, a.Action))
	if a, err = approval.Consume(ctx, p.e.Store(), id, a.Action, a.Run, a.Group, fp, now); err != nil {
		return nil, err
	}
	p.e.Observer().Approved(string(a.Action))
	res, err := p.runResolution(ctx, a)
	return &Approved{Approval: a, Result: res}, err
}

// runResolution carries out a consumed approval.
func (p *Plane) runResolution(ctx context.Context, a *tine.Approval) (any, error) {
	switch a.Action {
	case tine.ActionMerge:
		var o engine.MergeOptions
		if err := unmarshalArgs(a.Args, &o); err != nil {
			return nil, err
		}
		o.DryRun = false
		return p.e.Merge(ctx, a.Run, o)
	case tine.ActionPromote:
		var o struct {
			DropSourceChanges bool `json:"drop_source_changes"`
		}
		if err := unmarshalArgs(a.Args, &o); err != nil {
			return nil, err
		}
		return p.e.Promote(ctx, a.Run, o.DropSourceChanges)
	case tine.ActionDiscard:
		return p.e.Discard(ctx, a.Run, false)
	case tine.ActionChoose:
		var o engine.ChooseOptions
		if err := unmarshalArgs(a.Args, &o); err != nil {
			return nil, err
		}
		return p.e.Choose(ctx, a.Group, a.Run, o)
	case tine.ActionEffect:
		return p.doEffect(ctx, a)
	}
	return nil, fmt.Errorf("approval %s: action %q cannot run: %w", a.ID, a.Action, tine.ErrInvalid)
}

func unmarshalArgs(raw json.RawMessage, v any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("approval arguments: %v: %w", err, tine.ErrInvalid)
	}
	return nil
}

// Refuse records a person's refusal of approval id.
func (p *Plane) Refuse(ctx context.Context, id, by string) (*tine.Approval, error) {
	return approval.Refuse(ctx, p.e.Store(), id, by, p.now())
}

// Pending lists the approvals waiting for a person, of workspace ref or
// of every workspace.
func (p *Plane) Pending(ctx context.Context, ref string) ([]*tine.Approval, error) {
	ws := ""
	if ref != "" {
		w, err := p.e.FindWorkspace(ctx, ref)
		if err != nil {
			return nil, err
		}
		ws = w.ID
	}
	if _, err := approval.Sweep(ctx, p.e.Store(), p.now()); err != nil {
		return nil, err
	}
	return approval.Pending(ctx, p.e.Store(), ws, p.now())
}
