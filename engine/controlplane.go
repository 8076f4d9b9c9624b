package engine

import (
	"context"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/grouprec"
)

// ControlPlane is what the engine's own operations need of the control
// plane (package control implements it): the engine owns this interface
// and never imports control. It is injected by WithControl; the default,
// NopControlPlane, does nothing.
type ControlPlane interface {
	// Chosen is told that a person chose fork chosen (a run id) of a group
	// of workspace ws whose stored verdict is v (nil when no judge ran), so
	// the judge's weights learn from it. It is best effort: the choice is
	// made and recorded whatever it returns.
	Chosen(ws string, v *grouprec.Verdict, chosen string) error
	// RevokeCap revokes run r's capability. Fork calls it before the
	// parent's files are cloned, so that a copy of its token inside a fork
	// is worthless; an error stops the fork.
	RevokeCap(ctx context.Context, r *tine.Run) error
	// IssueCaps gives each of runs (of workspace w) a fresh capability:
	// Fork to the parent and its forks once they are cloned, whatever
	// happened, and Rebuild to every live run of a rebuilt store.
	IssueCaps(ctx context.Context, w *tine.Workspace, runs ...*tine.Run) error
	// Promoted is told that fork r became its workspace's source, so the
	// effects it asked for as a fork are offered to a person. It is best
	// effort: the promotion stands whatever it returns (the engine warns).
	Promoted(ctx context.Context, r Ref) error
}

// NopControlPlane is the control plane of an engine given none.
type NopControlPlane struct{}

// Chosen does nothing.
func (NopControlPlane) Chosen(string, *grouprec.Verdict, string) error { return nil }

// RevokeCap does nothing.
func (NopControlPlane) RevokeCap(context.Context, *tine.Run) error { return nil }

// IssueCaps does nothing.
func (NopControlPlane) IssueCaps(context.Context, *tine.Workspace, ...*tine.Run) error { return nil }

// Promoted does nothing.
func (NopControlPlane) Promoted(context.Context, Ref) error { return nil }

var _ ControlPlane = NopControlPlane{}

// WithControl gives the engine its control plane, made from the engine
// itself (the plane reads runs and resolves them through it). Without it
// (or with make nil), the engine's operations take no control step.
func WithControl(make func(*Engine) ControlPlane) Option {
	return func(o *options) { o.control = make }
}

// Control returns the engine's control plane.
func (e *Engine) Control() ControlPlane { return e.ctl }
