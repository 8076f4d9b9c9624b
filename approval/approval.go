package approval

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tinehq/tine"
)

// Errors of a refused approval. ErrStale and ErrUsed wrap tine.ErrState,
// since the run changed under the approval or the approval was decided
// already; the others wrap tine.ErrPrivilege, since the action lacks a
// person's consent. Tell them apart with errors.Is.
var (
	// ErrNotApproved means the approval is still pending or was refused.
	ErrNotApproved = fmt.Errorf("not approved: %w", tine.ErrPrivilege)
	// ErrMismatch means the approval is for another action, run or group.
	ErrMismatch = fmt.Errorf("approval does not match: %w", tine.ErrPrivilege)
	// ErrStale means the run's state or readiness changed since the
	// approval was offered.
	ErrStale = fmt.Errorf("approval is stale: %w", tine.ErrState)
	// ErrExpired means the approval's time ran out before it was used.
	ErrExpired = fmt.Errorf("approval expired: %w", tine.ErrPrivilege)
	// ErrUsed means the approval was already decided or consumed.
	ErrUsed = fmt.Errorf("already used: %w", tine.ErrState)
)

// DefaultTTL is how long an approval lives when its request sets no
// expiry.
const DefaultTTL = 30 * time.Minute

// Request records a as a pending approval at time now. It gives a a new id
// if it has none and an expiry DefaultTTL from now if it has none, and
// wraps tine.ErrInvalid unless a names a workspace, a run or group, a
// fingerprint, an action that needs approval and an expiry after now.
func Request(ctx context.Context, st tine.Store, a *tine.Approval, now time.Time) error {
	if a.ID == "" {
		a.ID = tine.NewID(tine.PrefixApproval)
	}
	if a.ExpiresAt.IsZero() {
		a.ExpiresAt = now.Add(DefaultTTL)
	}
	a.State, a.CreatedAt, a.DecidedAt, a.DecidedBy = tine.ApprovalPending, now, time.Time{}, ""
	if err := validate(a, now); err != nil {
		return err
	}
	return st.Update(ctx, func(tx tine.Tx) error {
		if err := tx.PutApproval(a); err != nil {
			return fmt.Errorf("request approval: %w", err)
		}
		return tx.AppendEvent(event(a, now))
	})
}

// validate checks a new approval.
func validate(a *tine.Approval, now time.Time) error {
	var why string
	switch {
	case !a.Action.NeedsApproval():
		why = fmt.Sprintf("action %q needs no approval", a.Action)
	case a.Workspace == "":
		why = "no workspace"
	case a.Run == "" && a.Group == "":
		why = "neither run nor group"
	case a.Fingerprint == "":
		why = "no fingerprint"
	case !a.ExpiresAt.After(now):
		why = "expires before it is made"
	default:
		return nil
	}
	return fmt.Errorf("request approval: %s: %w", why, tine.ErrInvalid)
}

// Approve records that the person by approved the pending approval id at
// time now, and returns it.
func Approve(ctx context.Context, st tine.Store, id, by string, now time.Time) (*tine.Approval, error) {
	return decide(ctx, st, id, by, tine.ApprovalApproved, now)
}

// Refuse records that the person by refused the approval id at time now,
// and returns it. An approval not yet consumed can still be refused.
func Refuse(ctx context.Context, st tine.Store, id, by string, now time.Time) (*tine.Approval, error) {
	return decide(ctx, st, id, by, tine.ApprovalRefused, now)
}

// decide records a person's decision on approval id.
func decide(ctx context.Context, st tine.Store, id, by string, to tine.ApprovalState, now time.Time) (*tine.Approval, error) {
	if by == "" {
		return nil, fmt.Errorf("decide approval %s: no one decided: %w", id, tine.ErrInvalid)
	}
	return change(ctx, st, id, now, func(a *tine.Approval) error {
		if a.State != tine.ApprovalPending && (to != tine.ApprovalRefused || a.State != tine.ApprovalApproved) {
			return stateErr(a)
		}
		a.State, a.DecidedAt, a.DecidedBy = to, now, by
		return nil
	})
}

// Consume uses up approval id for action on run and group at time now,
// given the run's current fingerprint, and returns it. It succeeds once,
// and only for an approved, unexpired approval of exactly that action, run
// and group, offered when the run had that fingerprint; otherwise it
// refuses with ErrUsed, ErrExpired, ErrNotApproved, ErrMismatch or ErrStale
// and leaves the approval usable, unless it found it expired.
func Consume(ctx context.Context, st tine.Store, id string, action tine.Action, run, group, fingerprint string, now time.Time) (*tine.Approval, error) {
	return change(ctx, st, id, now, func(a *tine.Approval) error {
		switch {
		case a.State != tine.ApprovalApproved:
			return stateErr(a)
		case a.Action != action || a.Run != run || a.Group != group:
			return fmt.Errorf("approval %s is for %s, not %s: %w", a.ID, subject(a.Action, a.Run, a.Group),
				subject(action, run, group), ErrMismatch)
		case a.Fingerprint != fingerprint:
			return fmt.Errorf("approval %s: %s changed since it was offered: %w", a.ID, subject(a.Action, a.Run, a.Group), ErrStale)
		}
		a.State = tine.ApprovalConsumed
		return nil
	})
}

// subject describes what an approval is for: "merge of run r1 in group g1".
func subject(action tine.Action, run, group string) string {
	s := string(action)
	if run != "" {
		s += " of run " + run
	}
	if group != "" {
		s += " in group " + group
	}
	return s
}

// stateErr is the refusal for an approval in a state that does not allow
// what was asked.
func stateErr(a *tine.Approval) error {
	switch a.State {
	case tine.ApprovalPending:
		return fmt.Errorf("approval %s is still pending: %w", a.ID, ErrNotApproved)
	case tine.ApprovalRefused:
		return fmt.Errorf("approval %s was refused by %s: %w", a.ID, a.DecidedBy, ErrNotApproved)
	case tine.ApprovalExpired:
		return fmt.Errorf("approval %s expired at %s: %w", a.ID, a.ExpiresAt.Format(time.RFC3339), ErrExpired)
	}
	return fmt.Errorf("approval %s is %s: %w", a.ID, a.State, ErrUsed)
}

// change loads approval id in one transaction, expires it if its time is
// up, lets fn check and change it, and writes it back with an event if its
// state changed. An approval found expired is recorded as expired even
// though the call is refused, so its refusal is committed, not rolled back.
func change(ctx context.Context, st tine.Store, id string, now time.Time, fn func(*tine.Approval) error) (*tine.Approval, error) {
	var out *tine.Approval
	var refusal error
	err := st.Update(ctx, func(tx tine.Tx) error {
		a, err := tx.Approval(id)
		if err != nil {
			return err
		}
		before := a.State
		if refusal = expire(a, now); refusal == nil {
			refusal = fn(a)
		}
		if out = a; a.State == before {
			return nil
		}
		return save(tx, a, now)
	})
	if err == nil {
		err = refusal
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// expire marks a expired if it is pending or approved and its time is up
// at now, and then returns ErrExpired.
func expire(a *tine.Approval, now time.Time) error {
	live := a.State == tine.ApprovalPending || a.State == tine.ApprovalApproved
	if !live || now.Before(a.ExpiresAt) {
		return nil
	}
	a.State = tine.ApprovalExpired
	return stateErr(a)
}

// save writes a's new state and its event.
func save(tx tine.Tx, a *tine.Approval, now time.Time) error {
	if err := tx.UpdateApproval(a); err != nil {
		return err
	}
	return tx.AppendEvent(event(a, now))
}

// event is the log entry for a's current state: kind tine.ApprovalEvent(state).
func event(a *tine.Approval, now time.Time) *tine.Event {
	detail, _ := json.Marshal(map[string]string{ // cannot fail: strings only
		"approval": a.ID, "action": string(a.Action), "group": a.Group, "by": a.DecidedBy,
	})
	return &tine.Event{Time: now, Workspace: a.Workspace, Run: a.Run,
		Kind: tine.ApprovalEvent(a.State), Detail: detail}
}

// Pending lists the approvals of workspace, or of every workspace if it is
// empty, that wait for a decision and have not expired at now, oldest
// first.
func Pending(ctx context.Context, st tine.Store, workspace string, now time.Time) ([]*tine.Approval, error) {
	var out []*tine.Approval
	err := st.View(ctx, func(tx tine.Tx) error {
		all, err := tx.Approvals(tine.ApprovalFilter{Workspace: workspace, State: tine.ApprovalPending})
		for _, a := range all {
			if now.Before(a.ExpiresAt) {
				out = append(out, a)
			}
		}
		return err
	})
	return out, err
}

// Sweep records as expired every pending or approved approval whose time
// is up at now, and returns how many it expired.
func Sweep(ctx context.Context, st tine.Store, now time.Time) (int, error) {
	n := 0
	err := st.Update(ctx, func(tx tine.Tx) error {
		n = 0
		for _, s := range []tine.ApprovalState{tine.ApprovalPending, tine.ApprovalApproved} {
			all, err := tx.Approvals(tine.ApprovalFilter{State: s})
			if err != nil {
				return err
			}
			for _, a := range all {
				if expire(a, now) == nil {
					continue
				}
				if err := save(tx, a, now); err != nil {
					return err
				}
				n++
			}
		}
		return nil
	})
	return n, err
}
