package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
)

// A run's layout.Run.Hidden file holds the paths ForkOptions.Hide kept
// from its processes (JSON, a list of absolute paths).

// checkHide refuses paths ForkOptions.Hide cannot keep from forks of p:
// relative ones, missing ones, files (a directory is covered), those inside p's workspace (a fork sees its
// own copy of them) or holding it, and any when p's [confine] is off
// (nothing is covered then).
func (e *Engine) checkHide(ctx context.Context, p Ref, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	for _, h := range paths {
		if !filepath.IsAbs(h) || filepath.Clean(h) != h {
			return fmt.Errorf("cannot hide %q from forks: want a clean absolute path: %w", h, tine.ErrInvalid)
		}
		if fi, err := os.Stat(h); err != nil {
			return fmt.Errorf("cannot hide %s from forks: %w", h, errors.Join(err, tine.ErrInvalid))
		} else if !fi.IsDir() {
			return fmt.Errorf("cannot hide %s from forks: not a directory: %w", h, tine.ErrInvalid)
		}
		if fstree.Within(p.Workspace.Path, h) || fstree.Within(h, p.Workspace.Path) {
			return fmt.Errorf("cannot hide %s from forks: it is inside workspace %s or holds it (a fork has its own copy of the workspace's files): %w",
				h, p.Workspace.Path, tine.ErrInvalid)
		}
	}
	if cfg, err := e.Config(ctx, p); err == nil && cfg.Confine.Off {
		return fmt.Errorf("cannot hide %s from forks: [confine] off in %s's tine.toml covers nothing: %w", paths[0], p.Workspace.Name, tine.ErrUnsupported)
	}
	return nil
}

// writeHidden records paths as hidden from each of forks, before any of
// their processes start.
func (e *Engine) writeHidden(forks []*tine.Run, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	b, err := json.Marshal(paths)
	if err != nil {
		return err
	}
	for _, f := range forks {
		p := e.lay.Run(f.Workspace, f.ID).Hidden()
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Hidden returns the paths kept from run r's processes besides the
// usual (ForkOptions.Hide); none when there are none or the file is
// unreadable.
func (e *Engine) Hidden(r Ref) []string {
	b, err := os.ReadFile(e.lay.Run(r.Workspace.ID, r.Run.ID).Hidden())
	if err != nil {
		return nil
	}
	var paths []string
	if json.Unmarshal(b, &paths) != nil {
		return nil
	}
	return paths
}
