package tine

import (
	"encoding/json"
	"time"
)

// Workspace is a project directory under tine's management.
type Workspace struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Path    string `json:"path"`          // absolute workspace path
	Backend string `json:"backend"`       // file backend: overlay, btrfs, reflink or copy
	Net     bool   `json:"net,omitempty"` // every run gets a network namespace and address of its own
	// UID and GID are the workspace's owner (who ran tine init) and their
	// primary group: every process in its runs runs as them, and through
	// the daemon only they (and root) see the workspace.
	UID int `json:"uid"`
	GID int `json:"gid"`
	// Groups are the ids of groups whose members may also see and act on
	// the workspace through the daemon (tine init --group).
	Groups    []int     `json:"groups,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// Role says whether a run is its workspace's source or a fork.
type Role string

// Roles of a run.
const (
	RoleSource  Role = "source"
	RoleFork    Role = "fork"
	RoleRetired Role = "retired" // a former source, replaced by a promoted fork
)

// State is where a run is in its lifecycle.
type State string

// States of a run. A run's row is written only once its files are in place,
// so a run is active from its first record; a crash before that leaves
// directories without rows, which the sweeper removes.
const (
	StateActive    State = "active"
	StateDiscarded State = "discarded"
)

// Resolution records how a run's work was carried back, if it was.
type Resolution string

// Resolutions of a run. An empty resolution means the run's work was never
// merged or promoted, so discarding it would lose work.
const (
	ResolutionNone     Resolution = ""
	ResolutionMerged   Resolution = "merged"
	ResolutionPromoted Resolution = "promoted"
)

// ProcState is the recorded state of a run's processes: what tine last
// made of them. Whether a supervisor really lives is checked, never assumed
// from this.
type ProcState string

// Process states of a run. The empty state means never started.
const (
	ProcStopped ProcState = "stopped"
	ProcRunning ProcState = "running"
)

// Run is one live trajectory of a workspace: its file view and identity.
type Run struct {
	ID         string     `json:"id"`
	Workspace  string     `json:"workspace"`
	Name       string     `json:"name"`
	Parent     string     `json:"parent,omitempty"` // parent run id; empty for the source
	Role       Role       `json:"role"`
	State      State      `json:"state"`
	Base       string     `json:"base"`   // version the run's view was created from (fork point or rollback target)
	Origin     string     `json:"origin"` // version the run was forked from; diffs count from here
	Group      string     `json:"group,omitempty"`
	Approach   string     `json:"approach,omitempty"`
	GitHead    string     `json:"git_head,omitempty"` // HEAD commit at the fork point, for git workspaces
	Resolution Resolution `json:"resolution,omitempty"`
	Proc       ProcState  `json:"proc,omitempty"` // whether the run's processes should be running
	Addr       string     `json:"addr,omitempty"` // the run's own network address, when it has one
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
}

// Active reports whether the run is in state active: not discarded, so it
// still has a file view.
func (r *Run) Active() bool { return r.State == StateActive }

// VersionKind says why a version was recorded.
type VersionKind string

// Kinds of version.
const (
	VersionInit       VersionKind = "init"       // the workspace's contents when it was taken under management
	VersionFork       VersionKind = "fork"       // a fork point
	VersionCheckpoint VersionKind = "checkpoint" // an explicit checkpoint
	VersionSaved      VersionKind = "saved"      // a run's state saved before a rollback replaced it
	// VersionSealed is a busy run's files sealed by the daemon in the
	// background once its writes settled, so that its next fork copies
	// only what changed since (a stepping stone, not a point to return to).
	VersionSealed VersionKind = "sealed"
)

// Version is an immutable, ordered stack of layers: a complete frozen file tree.
type Version struct {
	ID        string      `json:"id"`
	Workspace string      `json:"workspace"`
	Parent    string      `json:"parent,omitempty"` // the version this one was derived from
	Run       string      `json:"run,omitempty"`    // the run whose files it records
	Kind      VersionKind `json:"kind"`
	Label     string      `json:"label,omitempty"`
	Layers    []string    `json:"layers"` // layer ids, bottom first
	CreatedAt time.Time   `json:"created_at"`
}

// Layer is an immutable directory of file changes (overlay semantics) or,
// for backends without stacking, a whole frozen tree.
type Layer struct {
	ID        string    `json:"id"`
	Workspace string    `json:"workspace"`
	Bytes     int64     `json:"bytes"`
	CreatedAt time.Time `json:"created_at"`
}

// Group is the set of forks made by one fork call.
type Group struct {
	ID        string    `json:"id"`
	Workspace string    `json:"workspace"`
	Parent    string    `json:"parent"` // the run that was forked
	Version   string    `json:"version"`
	CreatedAt time.Time `json:"created_at"`
}

// Event is one entry of the append-only event log: a state change and its reason.
type Event struct {
	Seq       int64           `json:"seq"`
	Time      time.Time       `json:"time"`
	Workspace string          `json:"workspace"`
	Run       string          `json:"run,omitempty"`
	Kind      EventKind       `json:"kind"`
	Detail    json.RawMessage `json:"detail,omitempty"`
}

// NewEvent builds an event of kind at time at (kept in UTC) for workspace
// ws and run (none when ""), its detail stored as it is when it is a
// json.RawMessage and marshalled otherwise (none when nil or when it cannot
// be marshalled). Seq is the log's to give.
func NewEvent(at time.Time, ws, run string, kind EventKind, detail any) *Event {
	ev := &Event{Time: at.UTC(), Workspace: ws, Run: run, Kind: kind}
	if raw, ok := detail.(json.RawMessage); ok {
		ev.Detail = raw
	} else if detail != nil {
		if b, err := json.Marshal(detail); err == nil {
			ev.Detail = b
		}
	}
	return ev
}

// ValidName reports whether s can name a workspace or run: 1 to 64 letters,
// digits, '.', '_' or '-', starting with a letter or digit.
func ValidName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i, c := range s {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

// ServiceStatus is what the supervisor knows of one service.
type ServiceStatus struct {
	Name     string    `json:"name"`
	Pid      int       `json:"pid,omitempty"` // in the run's pid namespace
	State    string    `json:"state"`
	Exit     *int      `json:"exit,omitempty"`
	Restarts int       `json:"restarts,omitempty"`
	Started  time.Time `json:"started,omitzero"`
	Error    string    `json:"error,omitempty"`
	Log      string    `json:"log"`
}
