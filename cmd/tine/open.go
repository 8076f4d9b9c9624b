package main

import (
	"context"
	"fmt"
	"os"

	"github.com/tinehq/tine"

	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/layer/builtin"
	"github.com/tinehq/tine/runtime"
	"github.com/tinehq/tine/store"
)

// engineOptions wires the engine: the store ($TINE_STORE_URL or the state
// directory's config.toml chooses it; SQLite in the state directory by
// default), tine's backends in the order auto tries them, warnings to
// standard error, the process runtime (warning there too) and the control
// plane. Every command that opens a state directory (engine.Open,
// doctor's Diagnose, SetAside, Rebuild and Purge) passes these.
func (a *app) engineOptions() ([]engine.Option, error) {
	u, err := store.URL(a.home)
	if err != nil {
		return nil, err
	}
	st, err := store.Option(u)
	if err != nil {
		return nil, err
	}
	return []engine.Option{
		st,
		engine.WithBackends(builtin.Backends()...),
		engine.WithWarnings(a.stderr),
		runtime.With(runtime.Options{Warnings: a.stderr}),
		control.With(),
	}, nil
}

// open opens the engine, sweeping first unless extra says otherwise.
func (a *app) open(ctx context.Context, extra ...engine.Option) (*engine.Engine, error) {
	if err := a.insideRun(); err != nil {
		return nil, err
	}
	if err := a.noState(); err != nil {
		return nil, err
	}
	opts, err := a.engineOptions()
	if err != nil {
		return nil, err
	}
	return engine.Open(ctx, a.home, append(opts, extra...)...)
}

// inRun reports whether this process runs inside a run (tine gives every
// run its capability, TINE_CAPABILITY).
func inRun() bool { return os.Getenv("TINE_CAPABILITY") != "" }

// insideRun refuses to open the default state directory inside a run
// (TINE_CAPABILITY set): its mounts cover it, so root's tine found "the
// store missing" beside its workspaces and a normal user's made a fresh,
// empty one in the fork's home. A run reaches tine through its
// capability; TINE_HOME or --home still name a state directory of its own
// (tine's own tests, run in a fork).
func (a *app) insideRun() error {
	if !inRun() || a.homeSet || os.Getenv("TINE_HOME") != "" {
		return nil
	}
	return fmt.Errorf("tine %s works on tine's state directory, which a run does not see: inside a run, tine fork-self, tine request, tine effect and tine mcp (its tools inspect and diff this run and its forks) go through the run's capability; TINE_HOME=DIR tine %s uses a state directory of its own: %w",
		a.cmd, a.cmd, tine.ErrUnsupported)
}
