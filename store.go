package tine

import (
	"context"
	"time"
)

// Store persists tine's metadata. Every change happens inside Update, which
// commits all of it or none; readers use View. Metadata is committed before
// any directory is created or deleted, so a crash leaves at worst rows in
// StateCreating or files without rows, both of which the sweeper removes.
type Store interface {
	// View runs fn in a read-only transaction.
	View(ctx context.Context, fn func(Tx) error) error
	// Update runs fn in a read-write transaction, committed when fn returns nil
	// and rolled back otherwise.
	Update(ctx context.Context, fn func(Tx) error) error
	// Close releases the store.
	Close() error
}

// RunFilter selects runs; empty fields match everything.
type RunFilter struct {
	Workspace string
	Parent    string
	Group     string
	State     State
}

// EventFilter selects events in sequence order; empty fields match everything.
type EventFilter struct {
	Workspace string
	Run       string
	After     int64 // only events with Seq > After
	Limit     int   // at most this many (0: no limit)
}

// Tx is one store transaction. Getters return ErrNotFound for a missing
// record; Put methods insert and return ErrExists when an id, a workspace
// path or a name within a workspace is taken.
type Tx interface {
	PutWorkspace(w *Workspace) error
	Workspace(id string) (*Workspace, error)
	// WorkspaceByPath returns the workspace managing exactly path.
	WorkspaceByPath(path string) (*Workspace, error)
	// WorkspaceByName returns the workspace called name.
	WorkspaceByName(name string) (*Workspace, error)
	Workspaces() ([]*Workspace, error)
	// DeleteWorkspace removes a workspace and every run, version, layer,
	// group and event of it.
	DeleteWorkspace(id string) error

	PutRun(r *Run) error
	// UpdateRun rewrites every field of an existing run and sets UpdatedAt.
	UpdateRun(r *Run) error
	Run(id string) (*Run, error)
	// RunByName returns the run called name in workspace ws.
	RunByName(ws, name string) (*Run, error)
	// Runs lists runs in creation order.
	Runs(f RunFilter) ([]*Run, error)
	// DeleteRun removes a run row; only the sweeper uses it, for runs that
	// never became active.
	DeleteRun(id string) error

	PutVersion(v *Version) error
	Version(id string) (*Version, error)
	// Versions lists a workspace's versions in creation order.
	Versions(ws string) ([]*Version, error)
	DeleteVersion(id string) error

	PutLayer(l *Layer) error
	Layer(id string) (*Layer, error)
	// Layers lists a workspace's layers in creation order.
	Layers(ws string) ([]*Layer, error)
	DeleteLayer(id string) error

	PutGroup(g *Group) error
	Group(id string) (*Group, error)
	// Groups lists a workspace's groups in creation order.
	Groups(ws string) ([]*Group, error)
	DeleteGroup(id string) error

	// AppendEvent adds e to the log, setting its Seq and, if zero, its Time.
	AppendEvent(e *Event) error
	// Events lists events in sequence order.
	Events(f EventFilter) ([]*Event, error)

	// SetCapability stores c as its run's only capability, replacing any
	// earlier one, revoked or not. It sets c.Generation to one more than the
	// run's previous generation (1 for the first), c.IssuedAt to now if
	// zero, and c.Revoked to false. It wraps ErrNotFound if the run does not
	// exist. A run's capability goes when the run's row does.
	SetCapability(c *Capability) error
	// Capability returns run's capability, revoked or not.
	Capability(run string) (*Capability, error)
	// RevokeCapability marks run's capability revoked and erases its secret.
	RevokeCapability(run string) error
	// SeeNonce records that run used nonce, to be remembered until the time
	// until, and reports whether run had already used it. It first forgets
	// every nonce, of any run, whose until is before now. It wraps
	// ErrNotFound if the run does not exist.
	SeeNonce(run, nonce string, now, until time.Time) (seen bool, err error)

	// PutApproval inserts a, setting its CreatedAt to now if zero. It wraps
	// ErrNotFound if a's workspace does not exist and ErrInvalid if Args or
	// Evidence is not JSON. An approval goes with its workspace.
	PutApproval(a *Approval) error
	Approval(id string) (*Approval, error)
	// UpdateApproval rewrites the decision of an existing approval: State,
	// DecidedAt and DecidedBy. Every other field is fixed when it is put.
	UpdateApproval(a *Approval) error
	// Approvals lists approvals in creation order.
	Approvals(f ApprovalFilter) ([]*Approval, error)
}
