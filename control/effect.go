package control

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/approval"
	"github.com/tinehq/tine/capability"
	"github.com/tinehq/tine/effect"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/runenv"
)

// EffectAnswer is what asking for an effect gives: the pending approval a
// person decides, or, for a key already carried out, its receipt.
type EffectAnswer struct {
	Approval *tine.Approval  `json:"approval"`
	Plan     effect.Plan     `json:"plan"`
	Receipt  *effect.Receipt `json:"receipt,omitempty"`
	Message  string          `json:"message"`
}

// EffectOf is what approving a sends, as its evidence says it (the
// remote and the commit of a push, an HTTP request and its body's digest,
// a command); "" when a is not an effect's.
func EffectOf(a *tine.Approval) string {
	var ev struct {
		Effect string `json:"effect"`
	}
	if json.Unmarshal(a.Evidence, &ev) != nil {
		return ""
	}
	return ev.Effect
}

// Summary is the answer in a line, as tine effect prints it and the MCP
// tool answers: done already (with the receipt's status), pending as an
// approval, or the daemon's message (a fork's request, offered once the
// fork is promoted).
func (a *EffectAnswer) Summary() string {
	switch {
	case a.Receipt != nil:
		return fmt.Sprintf("done already: %s (status %d, ok %v)", effect.Describe(a.Plan), a.Receipt.Status, a.Receipt.OK)
	case a.Approval == nil:
		return a.Message
	}
	return fmt.Sprintf("asked: %s is pending as %s; %s", effect.Describe(a.Plan), a.Approval.ID, a.Message)
}

// RequestEffect records run actor's request for an external effect as a
// pending approval showing exactly what would be done. Only a source may
// ask: a fork's work reaches the world through a merge or a promotion
// first. A key already asked for answers with its approval (pending) or
// its receipt (done), and nothing new is recorded.
func (p *Plane) RequestEffect(ctx context.Context, actor engine.Ref, req effect.Request) (*EffectAnswer, error) {
	if actor.Run.Role != tine.RoleSource && actor.Run.Role != tine.RoleFork {
		return nil, fmt.Errorf("%s is %s: %w", actor.Run.Name, actor.Run.Role, capability.ErrScope)
	}
	cfg, err := p.e.Config(ctx, actor) // a fork's [effects] is its source's, not what the fork wrote
	if err != nil {
		return nil, err
	}
	fork, policy := actor.Run.Role == tine.RoleFork, cfg.Effects.FromForks
	if fork && policy != "after_promotion" {
		return nil, fmt.Errorf("external effects are refused from a fork (%s): merge or promote its work, then ask from the source "+
			"(or let forks ask for them once promoted: [effects] from_forks = \"after_promotion\"): %w", actor.Run.Name, capability.ErrScope)
	}
	req.Method = strings.ToUpper(req.Method)
	if err := req.Check(cfg.Effects.Commands); err != nil {
		return nil, fmt.Errorf("%v: %w", err, tine.ErrInvalid)
	}
	owner := engine.OwnerAccount(actor.Workspace)
	env := runenv.For(actor.Workspace, actor.Run, os.Environ(), os.Getuid())
	// A fork's files are at its view on the host; once promoted, at the
	// workspace path, where the effect will run.
	plan, err := effect.PlanFor(ctx, req, p.e.Path(actor.Workspace, actor.Run), owner.Credential(), env)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", err, tine.ErrInvalid)
	}
	plan.Dir = actor.Workspace.Path
	plan.Key = effect.KeyOf(plan)
	if ans, err := p.effectAsked(ctx, actor, plan.Key); ans != nil || err != nil {
		return ans, err
	}
	if fork {
		return p.deferEffect(ctx, actor, plan)
	}
	return p.offerEffect(ctx, actor, plan)
}

// offerEffect records plan, asked for by source run actor, as a pending
// approval showing exactly what would be done.
func (p *Plane) offerEffect(ctx context.Context, actor engine.Ref, plan effect.Plan) (*EffectAnswer, error) {
	args, _ := json.Marshal(plan)
	ev, _ := json.Marshal(map[string]any{"effect": effect.Describe(plan), "plan": plan})
	a := &tine.Approval{Workspace: actor.Workspace.ID, Run: actor.Run.ID, Action: tine.ActionEffect, Args: args,
		Evidence: ev, Fingerprint: approval.Fingerprint(actor.Run, effectReadiness), RequestedBy: actor.Run.ID}
	if err := approval.Request(ctx, p.e.Store(), a, p.now()); err != nil {
		return nil, err
	}
	return &EffectAnswer{Approval: a, Plan: plan, Message: "waiting for a person: tine approve " + a.ID}, nil
}

// deferEffect records plan, asked for by fork actor, to be offered to a
// person once the fork is promoted (an event "effect.deferred").
func (p *Plane) deferEffect(ctx context.Context, actor engine.Ref, plan effect.Plan) (*EffectAnswer, error) {
	if err := p.e.AppendEvent(ctx, actor.Workspace.ID, actor.Run.ID, tine.EventEffectDefer, plan); err != nil {
		return nil, err
	}
	return &EffectAnswer{Plan: plan, Message: fmt.Sprintf("recorded: once %s is promoted, a person is asked for %s", actor.Run.Name, effect.Describe(plan))}, nil
}

// Promoted asks a person, now that fork r is the source, for each effect
// it asked for as a fork (once per key). The engine's Promote calls it
// (engine.ControlPlane).
func (p *Plane) Promoted(ctx context.Context, r engine.Ref) error {
	var plans []effect.Plan
	err := p.e.Store().View(ctx, func(tx tine.Tx) error {
		evs, err := tx.Events(tine.EventFilter{Run: r.Run.ID})
		for _, ev := range evs {
			var plan effect.Plan
			if ev.Kind == tine.EventEffectDefer && json.Unmarshal(ev.Detail, &plan) == nil {
				plans = append(plans, plan)
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	now, err := p.e.FindRun(ctx, r.Run.ID)
	if err != nil {
		return err
	}
	for _, plan := range plans {
		if ans, err := p.effectAsked(ctx, now, plan.Key); ans != nil || err != nil {
			continue
		}
		if _, err := p.offerEffect(ctx, now, plan); err != nil {
			return err
		}
	}
	return nil
}

// effectReadiness stands for the run's files in an effect's fingerprint:
// the plan pins what is sent (the commit, the body), so the run may go on
// working while a person decides.
const effectReadiness = "effect"

// approvalReadiness is what an approval of action on r was offered on.
func (p *Plane) approvalReadiness(ctx context.Context, r engine.Ref, action tine.Action) string {
	if action == tine.ActionEffect {
		return effectReadiness
	}
	return p.Readiness(ctx, r)
}

// effectAsked finds run actor's earlier request with key: pending or
// approved, its approval; carried out, its receipt too. Refused or expired
// requests do not count.
func (p *Plane) effectAsked(ctx context.Context, actor engine.Ref, key string) (*EffectAnswer, error) {
	var found *EffectAnswer
	err := p.e.Store().View(ctx, func(tx tine.Tx) error {
		as, err := tx.Approvals(tine.ApprovalFilter{Workspace: actor.Workspace.ID})
		if err != nil {
			return err
		}
		for _, a := range as {
			var plan effect.Plan
			if a.Action != tine.ActionEffect || a.Run != actor.Run.ID || json.Unmarshal(a.Args, &plan) != nil || plan.Key != key {
				continue
			}
			switch a.State {
			case tine.ApprovalPending, tine.ApprovalApproved:
				found = &EffectAnswer{Approval: a, Plan: plan, Message: "already asked, waiting for a person: tine approve " + a.ID}
			case tine.ApprovalConsumed:
				found = &EffectAnswer{Approval: a, Plan: plan, Message: "already done (approval " + a.ID + "); not repeated"}
				found.Receipt, err = receiptOf(tx, actor, a.ID)
				return err
			}
		}
		return nil
	})
	return found, err
}

// receiptOf reads the receipt recorded for approval id on run r.
func receiptOf(tx tine.Tx, r engine.Ref, id string) (*effect.Receipt, error) {
	evs, err := tx.Events(tine.EventFilter{Run: r.Run.ID})
	if err != nil {
		return nil, err
	}
	for _, ev := range evs {
		var rec effect.Receipt
		if ev.Kind == tine.EventEffect && json.Unmarshal(ev.Detail, &rec) == nil && rec.Approval == id {
			return &rec, nil
		}
	}
	return nil, nil
}

// doEffect carries out a consumed approval of an effect, as the
// workspace's owner, outside the run, and records its receipt as an event
// "effect" of the run.
func (p *Plane) doEffect(ctx context.Context, a *tine.Approval) (*effect.Receipt, error) {
	var plan effect.Plan
	if err := unmarshalArgs(a.Args, &plan); err != nil {
		return nil, err
	}
	r, err := p.e.FindRun(ctx, a.Run)
	if err != nil {
		return nil, err
	}
	owner := engine.OwnerAccount(r.Workspace)
	rec := effect.Do(ctx, plan, a.ID, owner.Credential(), runenv.For(r.Workspace, r.Run, os.Environ(), os.Getuid()))
	err = p.e.AppendEvent(ctx, r.Workspace.ID, r.Run.ID, tine.EventEffect, rec)
	if err == nil && !rec.OK {
		why := rec.Error
		if why == "" {
			why = strings.TrimSpace(rec.Output)
		}
		err = fmt.Errorf("%s failed (status %d): %s", effect.Describe(plan), rec.Status, firstLine(why))
	}
	return &rec, err
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
