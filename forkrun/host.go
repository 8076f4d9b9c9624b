package forkrun

import (
	"context"
	"io"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/egress"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/judge"
	"github.com/tinehq/tine/layout"
	"github.com/tinehq/tine/runtime"
)

// Versions is what a fork-run needs of the versioned workspaces: its
// runs and their files, forking, what the forks changed, and resolving
// their group.
type Versions interface {
	FindRun(ctx context.Context, ref string) (engine.Ref, error)
	Path(w *tine.Workspace, r *tine.Run) string
	Fork(ctx context.Context, ref string, o engine.ForkOptions) (*engine.ForkResult, error)
	ForkPoint(ctx context.Context, r engine.Ref, fn func(dir string) error) error
	Work(ctx context.Context, r engine.Ref) (*engine.Work, error)
	Patch(ctx context.Context, r engine.Ref, w io.Writer) error
	Compare(ctx context.Context, ref string) (*engine.Comparison, error)
	Choose(ctx context.Context, ref, run string, o engine.ChooseOptions) (*engine.ChooseResult, error)
	Report(ctx context.Context, ref string) (*engine.GroupReport, error)
}

// Processes is what a fork-run needs to run the agents and checks inside
// the forks: their supervisors, commands in them, and what confines them.
type Processes interface {
	Launch(ctx context.Context, ws string, refs []string) error
	ExecWith(ctx context.Context, ref string, o runtime.ExecOptions) (*runtime.ExecResult, error)
	Stop(ctx context.Context, ref string) (*tine.Run, error)
	ProcState(r engine.Ref) (string, int)
	ConfinesWrites(ctx context.Context, ref string) bool
	SyncLoginsOf(ctx context.Context, ref string) []string
	ScratchDir(r engine.Ref) string
	Refusals(ctx context.Context, ref string) ([]egress.Record, error)
	// Screen is a PNG of a running fork's display (an error when it has
	// none up).
	Screen(ctx context.Context, ref string) ([]byte, error)
}

// StateDir is what knows the state directory's layout: the engine, or a
// Host. Reading a stored report needs nothing more.
type StateDir interface {
	Layout() layout.Layout
}

// Records is what a fork-run keeps and reads beside the versions: the
// state directory's layout (the group's report files, through grouprec,
// and the agents' logs), the workspace's event log, the
// judge's learned weights and the agent sessions the run's hook reported.
type Records interface {
	Layout() layout.Layout
	AppendEvent(ctx context.Context, ws, run string, kind tine.EventKind, detail any) error
	JudgeWeights(ws string) (*judge.Weights, int)
	AgentSession(ctx context.Context, r engine.Ref, kind string) string
}

// Host is everything a fork-run needs from outside it. [NewHost] wires
// the real one; tests give a fake.
type Host interface {
	Versions
	Processes
	Records
}

// host is a Host put together from its parts.
type host struct {
	Versions
	Processes
	Records
}

// NewHost is the Host that runs fork-runs for real, over engine e, its
// runtime and its control plane (runtime.Of, control.Of): the one place
// where forkrun's roles meet the values that fill them.
func NewHost(e *engine.Engine) Host {
	return host{Versions: e, Processes: runtime.Of(e), Records: records{Engine: e, cp: control.Of(e)}}
}

// records are the engine's records with the control plane's judge weights.
type records struct {
	*engine.Engine
	cp *control.Plane
}

// JudgeWeights are the control plane's (control.Plane.JudgeWeights).
func (r records) JudgeWeights(ws string) (*judge.Weights, int) { return r.cp.JudgeWeights(ws) }
