package engine

import (
	"context"
	"fmt"

	"github.com/tinehq/tine"
)

// Runtime runs the processes of runs: supervisors, cgroups, network
// namespaces, live forks (package runtime). The engine owns versions and
// files and asks its runtime only what its own transactions need: to hold
// a run's processes still while its files are sealed or written, to start
// a new fork's processes, and to stop a run's before its files go. The
// runtime is injected by WithRuntime; without one, runs have no processes.
type Runtime interface {
	// LiveMode resolves the live-state mode asked for forks of p: "" is
	// rerun for a run whose processes are up, none otherwise.
	LiveMode(p Ref, mode string) (string, error)
	// CheckLiveFork refuses a live fork (ptrace, criu) of p that should
	// not be made, such as one that would copy a secret.
	CheckLiveFork(ctx context.Context, p Ref, allowSecrets bool) error
	// Freeze holds r's processes still; thaw lets them go on.
	Freeze(ctx context.Context, r Ref) (thaw func(), err error)
	// Quiesce makes r safe to write into: frozen when supervised, else
	// refused while a command runs in it unless force.
	Quiesce(ctx context.Context, r Ref, force bool) (thaw func(), err error)
	// StartForks starts the forks' processes as mode says.
	StartForks(ctx context.Context, p Ref, forks []*tine.Run, mode string, noWait bool) []LiveReport
	// Supervised reports whether r's supervisor is up.
	Supervised(r Ref) bool
	// Busy reports whether anything (a supervisor, a tine exec session)
	// holds r's view.
	Busy(r Ref) bool
	// CheckIdle refuses, unless force, while a tine exec command runs in r.
	CheckIdle(r Ref, force bool) error
	// StopRun ends r's processes and records why.
	StopRun(ctx context.Context, r Ref, why tine.EventKind) error
	// ThawAbandoned thaws r, and says so, when a command that froze it
	// died before thawing it. The caller holds r's workspace lock, which
	// every freezer holds.
	ThawAbandoned(r Ref)
	// StopBeforeReplace stops r's supervisor, which holds r's view
	// mounted, before the view is replaced.
	StopBeforeReplace(ctx context.Context, r Ref) error
}

// Live-state modes of a fork: what becomes of the parent's processes.
const (
	LiveNone   = "none"   // forks start stopped
	LiveRerun  = "rerun"  // each fork starts its services fresh
	LivePtrace = "ptrace" // each eligible process is forked live; the rest rerun
	LiveCRIU   = "criu"   // whole trees checkpointed and restored, where criu works
	// LiveAuto lets each service's [[service]] live choose: a
	// single-threaded process by ptrace, any other tree by CRIU, else
	// restarted.
	LiveAuto = "auto"
)

// LiveReport says how one fork's processes were started.
type LiveReport struct {
	Run       string            `json:"run"`
	Mode      string            `json:"mode"`
	Started   bool              `json:"started"`
	Addr      string            `json:"addr,omitempty"`
	Forked    []LiveProcess     `json:"forked,omitempty"`    // processes carried over live
	Restarted []string          `json:"restarted,omitempty"` // services started fresh
	Refused   map[string]string `json:"refused,omitempty"`   // process → why it was not forked live
	// Choices say, service by service, how each reached the fork.
	Choices []LiveChoice `json:"choices,omitempty"`
	// Display, for a fork with a display of its own, is how it got it:
	// LiveCRIU (its X server forked live, with the clients CRIU could
	// carry; Choices says, service by service) or LiveRerun (the display
	// stack and its services started fresh from the fork's files).
	Display string `json:"display,omitempty"`
	// Services are the fork's supervised services as they were when the
	// fork returned: ready, or still starting (ForkOptions.NoWait), or failed.
	Services []tine.ServiceStatus `json:"services,omitempty"`
	Error    string               `json:"error,omitempty"`
}

// LiveProcess is a process carried into a fork by a live fork.
type LiveProcess struct {
	Service string `json:"service,omitempty"`
	Pid     int    `json:"pid"`   // the parent's process
	Child   int    `json:"child"` // its copy in the fork
	// Engine is how it was carried: LivePtrace (the process forked
	// itself) or LiveCRIU (its tree checkpointed and restored).
	Engine  string  `json:"engine,omitempty"`
	PauseMS float64 `json:"pause_ms"`          // how long the parent's process was stopped
	TookMS  float64 `json:"took_ms,omitempty"` // CRIU: checkpoint and restore, start to end
	// Why says why this engine was chosen ("5 threads", "live = criu").
	Why string `json:"why,omitempty"`
}

// LiveChoice says how one service of a fork's parent reached the fork:
// carried live by an engine, or restarted, and why. A fork records its
// choices; tine fork and tine ps print them.
type LiveChoice struct {
	Service string  `json:"service"`
	Engine  string  `json:"engine"` // LiveCRIU, LivePtrace, or LiveRerun: restarted
	Why     string  `json:"why,omitempty"`
	PauseMS float64 `json:"pause_ms,omitempty"`
	TookMS  float64 `json:"took_ms,omitempty"`
}

// WithRuntime gives the engine its runtime, made from the engine itself
// (the runtime reads runs and records their processes through it).
// Without it, runs have no processes.
func WithRuntime(make func(*Engine) Runtime) Option {
	return func(o *options) { o.runtime = make }
}

// Runtime returns the engine's runtime.
func (e *Engine) Runtime() Runtime { return e.rt }

// noRuntime is the runtime of an engine given none: runs have no
// processes, and forks cannot be asked to carry any.
type noRuntime struct{}

func (noRuntime) LiveMode(p Ref, mode string) (string, error) {
	if mode == "" || mode == LiveNone {
		return LiveNone, nil
	}
	return "", fmt.Errorf("live-state mode %s: this engine runs no processes: %w", mode, tine.ErrUnsupported)
}
func (noRuntime) CheckLiveFork(context.Context, Ref, bool) error     { return nil }
func (noRuntime) Freeze(context.Context, Ref) (func(), error)        { return func() {}, nil }
func (noRuntime) Quiesce(context.Context, Ref, bool) (func(), error) { return func() {}, nil }
func (noRuntime) StartForks(context.Context, Ref, []*tine.Run, string, bool) []LiveReport {
	return nil
}
func (noRuntime) Supervised(Ref) bool                                { return false }
func (noRuntime) Busy(Ref) bool                                      { return false }
func (noRuntime) CheckIdle(Ref, bool) error                          { return nil }
func (noRuntime) StopRun(context.Context, Ref, tine.EventKind) error { return nil }
func (noRuntime) StopBeforeReplace(context.Context, Ref) error       { return nil }
func (noRuntime) ThawAbandoned(Ref)                                  {}
