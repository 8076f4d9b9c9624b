package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/approval"
	"github.com/tinehq/tine/capability"
)

// Code inside a run reaches the host through tine serve with its run's
// capability (a token in its cap directory, seen inside at
// /run/tine/cap/token). Capabilities are issued when a supervisor starts
// and rotated on every fork: the parent's is revoked before its files are
// cloned, and fresh ones are issued to it and to each fork after, so a copy
// of the parent's token inside a fork is worthless. A resolution asked for
// from inside a run is recorded as a pending approval and runs only when a
// person approves it (Approve).

// capPath is run r's token file.
func (e *Engine) capPath(r Ref) string { return e.lay.Run(r.Workspace.ID, r.Run.ID).CapToken() }

// IssueCaps gives each run a fresh capability and writes its token file.
func (e *Engine) IssueCaps(ctx context.Context, w *tine.Workspace, runs ...*tine.Run) error {
	caps := map[string]capability.Capability{}
	err := e.store.Update(ctx, func(tx tine.Tx) error {
		for _, r := range runs {
			c, err := capability.Issue(tx, r.ID)
			if err != nil {
				return err
			}
			caps[r.ID] = c
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range runs {
		if err := os.MkdirAll(e.lay.Run(w.ID, r.ID).Cap(), 0o700); err != nil {
			return err
		}
		if err := capability.WriteFile(e.capPath(Ref{w, r}), caps[r.ID]); err != nil {
			return fmt.Errorf("writing %s's capability: %w", r.Name, err)
		}
		// The run's processes run as the owner and read it.
		if err := GiveToOwner(w, e.lay.Run(w.ID, r.ID).Cap(), e.capPath(Ref{w, r})); err != nil {
			return fmt.Errorf("giving %s's capability to its owner: %w", r.Name, err)
		}
	}
	return nil
}

// revokeCap revokes run r's capability (before its files are cloned).
func (e *Engine) revokeCap(ctx context.Context, r *tine.Run) error {
	return e.store.Update(ctx, func(tx tine.Tx) error { return capability.Revoke(tx, r.ID) })
}

// Verifier checks requests signed with runs' capabilities against the store.
func (e *Engine) Verifier() *capability.Verifier {
	k := capability.Keyring{Store: e.store}
	return capability.NewVerifier(k, k)
}

// Readiness summarises what a person approves a resolution of run r on:
// its changed paths, their kinds and sizes. If the run changes after the
// offer, an approval of it is stale.
func (e *Engine) Readiness(ctx context.Context, r Ref) string {
	ch, err := e.Changes(ctx, r)
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
func (e *Engine) RequestResolution(ctx context.Context, actor Ref, res Resolution) (*tine.Approval, error) {
	r, err := e.FindRun(ctx, res.Run)
	if err != nil {
		return nil, err
	}
	evidence := map[string]any{}
	if ch, err := e.Changes(ctx, r); err == nil {
		evidence["changes"] = ch
	}
	if res.Action == tine.ActionMerge {
		var o MergeOptions
		json.Unmarshal(res.Args, &o)
		o.DryRun = true
		if plan, err := e.Merge(ctx, r.Run.ID, o); plan != nil {
			evidence["plan"] = plan.Plan
			if err != nil {
				evidence["plan_error"] = err.Error()
			}
		}
	}
	ev, _ := json.Marshal(evidence)
	a := &tine.Approval{Workspace: r.Workspace.ID, Run: r.Run.ID, Group: res.Group, Action: res.Action, Args: res.Args,
		Evidence: ev, Fingerprint: approval.Fingerprint(r.Run, e.Readiness(ctx, r)), RequestedBy: actor.Run.ID}
	if err := approval.Request(ctx, e.store, a, e.now()); err != nil {
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
func (e *Engine) Approve(ctx context.Context, id, by string) (*Approved, error) {
	now := e.now()
	a, err := approval.Approve(ctx, e.store, id, by, now)
	if err != nil {
		return nil, err
	}
	r, err := e.FindRun(ctx, a.Run)
	if err != nil {
		return nil, err
	}
	fp := approval.Fingerprint(r.Run, e.approvalReadiness(ctx, r, a.Action))
	if a, err = approval.Consume(ctx, e.store, id, a.Action, a.Run, a.Group, fp, now); err != nil {
		return nil, err
	}
	e.obs.Approved(string(a.Action))
	res, err := e.runResolution(ctx, a)
	return &Approved{Approval: a, Result: res}, err
}

// runResolution carries out a consumed approval.
func (e *Engine) runResolution(ctx context.Context, a *tine.Approval) (any, error) {
	switch a.Action {
	case tine.ActionMerge:
		var o MergeOptions
		if err := unmarshalArgs(a.Args, &o); err != nil {
			return nil, err
		}
		o.DryRun = false
		return e.Merge(ctx, a.Run, o)
	case tine.ActionPromote:
		var o struct {
			DropSourceChanges bool `json:"drop_source_changes"`
		}
		if err := unmarshalArgs(a.Args, &o); err != nil {
			return nil, err
		}
		return e.Promote(ctx, a.Run, o.DropSourceChanges)
	case tine.ActionDiscard:
		return e.Discard(ctx, a.Run, false)
	case tine.ActionChoose:
		var o struct {
			Promote bool `json:"promote"`
		}
		if err := unmarshalArgs(a.Args, &o); err != nil {
			return nil, err
		}
		return e.Choose(ctx, a.Group, a.Run, o.Promote)
	case tine.ActionEffect:
		return e.doEffect(ctx, a)
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
func (e *Engine) Refuse(ctx context.Context, id, by string) (*tine.Approval, error) {
	return approval.Refuse(ctx, e.store, id, by, e.now())
}

// Pending lists the approvals waiting for a person, of workspace ref or
// of every workspace.
func (e *Engine) Pending(ctx context.Context, ref string) ([]*tine.Approval, error) {
	ws := ""
	if ref != "" {
		w, err := e.FindWorkspace(ctx, ref)
		if err != nil {
			return nil, err
		}
		ws = w.ID
	}
	if _, err := approval.Sweep(ctx, e.store, e.now()); err != nil {
		return nil, err
	}
	return approval.Pending(ctx, e.store, ws, e.now())
}

// RunSocketPath is where tine serve listens for run r's requests, in its
// capability directory: the run sees it at supervisor.RunDir/ctl/tine.sock,
// and whatever arrives on it is the run's, never a person's.
func (e *Engine) RunSocketPath(r Ref) string { return e.lay.Run(r.Workspace.ID, r.Run.ID).Socket() }
