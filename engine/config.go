package engine

import (
	"context"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/config"
)

// Config reads run r's tine.toml, with a fork's boundary ([network],
// [secrets], [confine], [effects], [limits]) taken from its source's
// file, not its own: an agent in a fork may edit the fork's tine.toml,
// and must not loosen its own confinement, egress or secrets by doing so
// before its next start. A fork whose line of ancestry no longer reaches
// a source (its source was retired by a promotion) is held by the
// workspace's current source's file, and by tine's defaults when there is
// none.
func (e *Engine) Config(ctx context.Context, r Ref) (*config.Config, error) {
	cfg, err := config.Load(e.Path(r.Workspace, r.Run))
	if err != nil || r.Run.Role == tine.RoleSource {
		return cfg, err
	}
	src, ok := e.boundarySource(ctx, r)
	if !ok {
		return cfg.WithBoundaryOf(config.Default()), nil
	}
	scfg, err := config.Load(e.Path(src.Workspace, src.Run))
	if err != nil {
		return nil, err
	}
	return cfg.WithBoundaryOf(scfg), nil
}

// boundarySource is the source whose tine.toml bounds fork r: the source
// it descends from, else its workspace's current one.
func (e *Engine) boundarySource(ctx context.Context, r Ref) (Ref, bool) {
	if src, _, err := e.SourceAndForkPoint(ctx, r); err == nil {
		return src, true
	}
	var src *tine.Run
	e.store.View(ctx, func(tx tine.Tx) error {
		runs, err := tx.Runs(tine.RunFilter{Workspace: r.Workspace.ID})
		for _, x := range runs {
			if x.Role == tine.RoleSource && x.Active() {
				src = x
			}
		}
		return err
	})
	if src == nil {
		return Ref{}, false
	}
	return Ref{r.Workspace, src}, true
}
