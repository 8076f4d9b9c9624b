// Package control is tine's control plane over the engine: what the agents
// in runs and the people deciding for them do beside the versions and
// files. It holds the judge's weights learned from people's choices
// (weights.go) and the agents' turns and evidence their hooks report
// (turn.go).
//
// control imports engine, never the reverse: where one of the engine's own
// operations needs a control step (Choose learns weights), the engine calls
// the engine.ControlPlane it was given, which a Plane implements. Callers
// (cmd/tine, httpapi, dashboard, forkrun) hold a Plane and call it directly.
package control

import (
	"os"
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

// New returns the control plane over e. Give it to e (e.SetControl) so
// that the engine's own operations take their control steps through it.
func New(e *engine.Engine, opts ...Option) *Plane {
	p := &Plane{e: e, turnTTL: time.Hour, now: time.Now}
	for _, o := range opts {
		o(p)
	}
	return p
}

var _ engine.ControlPlane = (*Plane)(nil)

// writeFileAtomic writes data to path by a rename, so a reader never sees
// a partial file.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
