package main

import (
	"context"

	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/layer/builtin"
	"github.com/tinehq/tine/runtime"
	"github.com/tinehq/tine/sqlite"
)

// engineOptions wires the engine: the SQLite store, tine's backends in the
// order auto tries them, warnings to standard error, the process runtime
// (warning there too) and the control plane. Every command that
// opens a state directory (engine.Open, doctor's Diagnose, SetAside,
// Rebuild and Purge) passes these.
func (a *app) engineOptions() []engine.Option {
	return []engine.Option{
		engine.WithStore(sqlite.Open),
		engine.WithBackends(builtin.Backends()...),
		engine.WithWarnings(a.stderr),
		runtime.With(runtime.Options{Warnings: a.stderr}),
		control.With(),
	}
}

// open opens the engine, sweeping first.
func (a *app) open(ctx context.Context) (*engine.Engine, error) {
	return engine.Open(ctx, a.home, a.engineOptions()...)
}
