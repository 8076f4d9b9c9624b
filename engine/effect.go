package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/approval"
	"github.com/tinehq/tine/capability"
	"github.com/tinehq/tine/config"
	"github.com/tinehq/tine/effect"
)

// EffectAnswer is what asking for an effect gives: the pending approval a
// person decides, or, for a key already carried out, its receipt.
type EffectAnswer struct {
	Approval *tine.Approval  `json:"approval"`
	Plan     effect.Plan     `json:"plan"`
	Receipt  *effect.Receipt `json:"receipt,omitempty"`
	Message  string          `json:"message"`
}

// RequestEffect records run actor's request for an external effect as a
// pending approval showing exactly what would be done. Only a source may
// ask: a fork's work reaches the world through a merge or a promotion
// first. A key already asked for answers with its approval (pending) or
// its receipt (done), and nothing new is recorded.
func (e *Engine) RequestEffect(ctx context.Context, actor Ref, req effect.Request) (*EffectAnswer, error) {
	if actor.Run.Role != tine.RoleSource {
		return nil, fmt.Errorf("external effects are refused from a fork (%s): merge or promote its work, then ask from the source: %w",
			actor.Run.Name, capability.ErrScope)
	}
	cfg, err := config.Load(e.Path(actor.Workspace, actor.Run))
	if err != nil {
		return nil, err
	}
	if err := req.Check(cfg.Effects.Commands); err != nil {
		return nil, fmt.Errorf("%v: %w", err, tine.ErrInvalid)
	}
	owner := OwnerAccount(actor.Workspace)
	env := ExecEnv(actor, os.Environ(), os.Getuid())
	plan, err := effect.Resolve(ctx, req, actor.Workspace.Path, owner.Credential(), env)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, tine.ErrInvalid)
	}
	plan.Key = effect.KeyOf(plan)
	if ans, err := e.effectAsked(ctx, actor, plan.Key); ans != nil || err != nil {
		return ans, err
	}
	args, _ := json.Marshal(plan)
	ev, _ := json.Marshal(map[string]any{"effect": effect.Describe(plan), "plan": plan})
	a := &tine.Approval{Workspace: actor.Workspace.ID, Run: actor.Run.ID, Action: tine.ActionEffect, Args: args,
		Evidence: ev, Fingerprint: approval.Fingerprint(actor.Run, effectReadiness), RequestedBy: actor.Run.ID}
	if err := approval.Request(ctx, e.store, a, e.now()); err != nil {
		return nil, err
	}
	return &EffectAnswer{Approval: a, Plan: plan, Message: fmt.Sprintf("waiting for a person: %s; tine approve %s", effect.Describe(plan), a.ID)}, nil
}

// effectReadiness stands for the run's files in an effect's fingerprint:
// the plan pins what is sent (the commit, the body), so the run may go on
// working while a person decides.
const effectReadiness = "effect"

// approvalReadiness is what an approval of action on r was offered on.
func (e *Engine) approvalReadiness(ctx context.Context, r Ref, action tine.Action) string {
	if action == tine.ActionEffect {
		return effectReadiness
	}
	return e.Readiness(ctx, r)
}

// effectAsked finds run actor's earlier request with key: pending or
// approved, its approval; carried out, its receipt too. Refused or expired
// requests do not count.
func (e *Engine) effectAsked(ctx context.Context, actor Ref, key string) (*EffectAnswer, error) {
	var found *EffectAnswer
	err := e.store.View(ctx, func(tx tine.Tx) error {
		as, err := tx.Approvals(tine.ApprovalFilter{Workspace: actor.Workspace.ID})
		if err != nil {
			return err
		}
		for _, a := range as {
			var p effect.Plan
			if a.Action != tine.ActionEffect || a.Run != actor.Run.ID || json.Unmarshal(a.Args, &p) != nil || p.Key != key {
				continue
			}
			switch a.State {
			case tine.ApprovalPending, tine.ApprovalApproved:
				found = &EffectAnswer{Approval: a, Plan: p, Message: "already asked, waiting for a person: tine approve " + a.ID}
			case tine.ApprovalConsumed:
				found = &EffectAnswer{Approval: a, Plan: p, Message: "already done (approval " + a.ID + "); not repeated"}
				found.Receipt, err = receiptOf(tx, actor, a.ID)
				return err
			}
		}
		return nil
	})
	return found, err
}

// receiptOf reads the receipt recorded for approval id on run r.
func receiptOf(tx tine.Tx, r Ref, id string) (*effect.Receipt, error) {
	evs, err := tx.Events(tine.EventFilter{Run: r.Run.ID})
	if err != nil {
		return nil, err
	}
	for _, ev := range evs {
		var rec effect.Receipt
		if ev.Kind == "effect" && json.Unmarshal(ev.Detail, &rec) == nil && rec.Approval == id {
			return &rec, nil
		}
	}
	return nil, nil
}

// doEffect carries out a consumed approval of an effect, as the
// workspace's owner, outside the run, and records its receipt as an event
// "effect" of the run.
func (e *Engine) doEffect(ctx context.Context, a *tine.Approval) (*effect.Receipt, error) {
	var p effect.Plan
	if err := unmarshalArgs(a.Args, &p); err != nil {
		return nil, err
	}
	r, err := e.FindRun(ctx, a.Run)
	if err != nil {
		return nil, err
	}
	owner := OwnerAccount(r.Workspace)
	rec := effect.Do(ctx, p, a.ID, owner.Credential(), ExecEnv(r, os.Environ(), os.Getuid()))
	err = e.store.Update(ctx, func(tx tine.Tx) error {
		return tx.AppendEvent(e.event(r.Workspace.ID, r.Run.ID, "effect", rec))
	})
	if err == nil && !rec.OK {
		why := rec.Error
		if why == "" {
			why = strings.TrimSpace(rec.Output)
		}
		err = fmt.Errorf("%s failed (status %d): %s", effect.Describe(p), rec.Status, firstLine(why))
	}
	return &rec, err
}
