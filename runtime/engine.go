package runtime

import (
	"context"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
)

// The engine.Runtime the engine reaches the runtime through.

// LiveMode resolves the live-state mode asked for forks of p.
func (m *Manager) LiveMode(p engine.Ref, mode string) (string, error) { return m.liveMode(p, mode) }

// CheckLiveFork refuses a live fork of a process holding a secret unless
// allowed.
func (m *Manager) CheckLiveFork(ctx context.Context, p engine.Ref, allowSecrets bool) error {
	return m.refuseSecretLiveFork(ctx, p, allowSecrets)
}

// Freeze freezes r's processes, when it has a supervisor.
func (m *Manager) Freeze(ctx context.Context, r engine.Ref) (func(), error) { return m.freeze(ctx, r) }

// ThawAbandoned thaws r, and says so, when a command that froze it died
// before thawing it.
func (m *Manager) ThawAbandoned(r engine.Ref) { m.thawAbandoned(r) }

// Quiesce makes r safe to write into.
func (m *Manager) Quiesce(ctx context.Context, r engine.Ref, force bool) (func(), error) {
	return m.quiesce(ctx, r, force)
}

// StartForks starts each fork's processes as mode says.
func (m *Manager) StartForks(ctx context.Context, p engine.Ref, forks []*tine.Run, mode string, noWait bool) []engine.LiveReport {
	return m.startForks(ctx, p, forks, mode, noWait)
}

// Supervised reports whether r's supervisor is up.
func (m *Manager) Supervised(r engine.Ref) bool { return m.supervised(r) > 0 }

// Busy reports whether a supervisor or a tine exec session holds r's view.
func (m *Manager) Busy(r engine.Ref) bool { return len(m.Sessions(r)) > 0 || m.supervised(r) > 0 }

// CheckIdle refuses, unless force, while a tine exec command runs in r.
func (m *Manager) CheckIdle(r engine.Ref, force bool) error { return m.checkIdle(r, force) }

// StopRun ends r's processes and records why.
func (m *Manager) StopRun(ctx context.Context, r engine.Ref, why tine.EventKind) error {
	return m.stop(ctx, r, why)
}

// StopBeforeReplace stops r's supervisor before its view is replaced.
func (m *Manager) StopBeforeReplace(ctx context.Context, r engine.Ref) error {
	return m.stopIdle(ctx, r)
}
