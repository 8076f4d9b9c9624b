// Package control is tine's control plane over the engine: what the agents
// in runs and the people deciding for them do beside the versions and
// files. It holds the runs' capabilities (caps.go), the resolutions asked
// for from inside runs and the people's approvals of them (approve.go),
// the external effects runs ask for (effect.go), the judge's weights
// learned from people's choices (weights.go) and the agents' turns and
// evidence their hooks report (turn.go).
//
// control imports engine, never the reverse: where one of the engine's own
// operations needs a control step (Fork revokes and issues capabilities,
// Promote offers deferred effects, Choose learns weights), the engine calls
// the engine.ControlPlane it was opened With, which a Plane implements.
// Callers (cmd/tine, httpapi, dashboard, forkrun, the runtime's launch)
// take the engine's Plane with Of and call it directly.
package control

import (
	"time"

	"github.com/tinehq/tine/engine"
)

// Plane is the control plane of one engine.
type Plane struct {
	e       *engine.Engine
	turnTTL time.Duration
	now     func() time.Time
}

// Option configures New.
type Option func(*Plane)

// WithTurnTTL bounds a turn that never reported its stop (an agent that
// died); the default is an hour.
func WithTurnTTL(d time.Duration) Option { return func(p *Plane) { p.turnTTL = d } }

// New returns a control plane over e. An engine has one: open it With
// the options, and take its plane with Of.
func New(e *engine.Engine, opts ...Option) *Plane {
	p := &Plane{e: e, turnTTL: time.Hour, now: time.Now}
	for _, o := range opts {
		o(p)
	}
	return p
}

var _ engine.ControlPlane = (*Plane)(nil)

// With returns an engine.Open option that gives the engine a Plane made
// with opts, the one Of returns.
func With(opts ...Option) engine.Option {
	return engine.WithControl(func(e *engine.Engine) engine.ControlPlane { return New(e, opts...) })
}

// Of returns the Plane of an engine opened With one, or a new Plane with
// the default options for an engine opened without (whose own operations
// then take no control step).
func Of(e *engine.Engine) *Plane {
	if p, ok := e.Control().(*Plane); ok {
		return p
	}
	return New(e)
}
