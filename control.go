package tine

import (
	"encoding/json"
	"time"
)

// PrefixApproval prefixes approval ids.
const PrefixApproval = "a"

// Action is something code inside a run asks the host to do to a run. The
// capability package decides which run may ask it of which; the approval
// package holds back the resolutions until a person agrees.
type Action string

// Actions a run may request from inside.
const (
	ActionInspect  Action = "inspect"   // read a run's state, evidence and files
	ActionSendWork Action = "send_work" // start a command or hand a task to a run's agent
	ActionFork     Action = "fork"      // fork a run
	ActionMerge    Action = "merge"     // carry a run's work into another run
	ActionPromote  Action = "promote"   // make a fork the source
	ActionDiscard  Action = "discard"   // stop a run, keeping its history
	ActionChoose   Action = "choose"    // pick one fork of a group as the winner
	ActionEffect   Action = "effect"    // an external effect (a push, an HTTP request, a declared command), done by the daemon
)

// NeedsApproval reports whether a request for a, made from inside a run,
// must wait for a person's approval: true for the resolutions merge,
// promote, discard and choose, and for external effects.
func (a Action) NeedsApproval() bool {
	switch a {
	case ActionMerge, ActionPromote, ActionDiscard, ActionChoose, ActionEffect:
		return true
	}
	return false
}

// Capability is the host's record of a run's credential: the secret a
// request from inside the run is MAC'd with. A run has at most one; every
// issue replaces the last and raises Generation, so a token of an earlier
// generation no longer verifies. Revoked records keep their generation but
// not their secret.
type Capability struct {
	Run        string    `json:"run"`
	Secret     []byte    `json:"-"` // never serialised: it leaves the host only in the run's token file
	Generation int       `json:"generation"`
	IssuedAt   time.Time `json:"issued_at"`
	Revoked    bool      `json:"revoked,omitempty"`
}

// ApprovalState is where an approval is in its single-use lifecycle:
// pending, then approved or refused by a person, then consumed by the one
// action it allows; pending and approved ones expire.
type ApprovalState string

// States of an approval.
const (
	ApprovalPending  ApprovalState = "pending"
	ApprovalApproved ApprovalState = "approved"
	ApprovalConsumed ApprovalState = "consumed"
	ApprovalExpired  ApprovalState = "expired"
	ApprovalRefused  ApprovalState = "refused"
)

// Approval is a recorded, single-use decision that one resolution may run,
// bound to one run or group. It is requested from inside a run with the
// evidence for it, decided by a person, and consumed by the action itself,
// which must match it exactly and find the run as it was when offered.
type Approval struct {
	ID          string          `json:"id"`
	Workspace   string          `json:"workspace"`
	Run         string          `json:"run,omitempty"`   // the run the action is for
	Group       string          `json:"group,omitempty"` // the group the action is for
	Action      Action          `json:"action"`
	Args        json.RawMessage `json:"args,omitempty"`     // the action's arguments, e.g. the target or the chosen run
	Evidence    json.RawMessage `json:"evidence,omitempty"` // what the person is shown
	State       ApprovalState   `json:"state"`
	Fingerprint string          `json:"fingerprint"`            // of the run's state and readiness when offered
	RequestedBy string          `json:"requested_by,omitempty"` // the run that asked
	CreatedAt   time.Time       `json:"created_at"`
	ExpiresAt   time.Time       `json:"expires_at"`
	DecidedAt   time.Time       `json:"decided_at,omitzero"` // when approved or refused
	DecidedBy   string          `json:"decided_by,omitempty"`
}

// ApprovalFilter selects approvals in creation order; empty fields match
// everything.
type ApprovalFilter struct {
	Workspace string
	Run       string
	Group     string
	State     ApprovalState
}
