package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/tick"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/layout"
)

// A whole sweep of a workspace reads every run the store ever recorded for
// it, so it is not run on every command, which would then cost the store's
// history: Open sweeps a workspace only when something may be left to put
// right there, that is when a command died holding its lock or warned
// (the unfinished mark LockWorkspace leaves), when the workspace was not
// swept since the host booted (a reboot unmounts every view), or when the
// source's view is not mounted over the workspace (its marker shows) or a
// live run's view is not mounted, or when a run or layer directory is one
// the store does not have as live (a store that lost its last commits, a
// discard cut short); that check looks up each directory by its id, so it
// costs the live runs, not the history.
// Journals
// are written under the workspace's lock, so a journal an interrupted
// command left always comes with the mark. tine gc and the daemon's
// schedule sweep every workspace (Sweep).

// bootIDFile holds the kernel's random id of the current boot.
var bootIDFile = "/proc/sys/kernel/random/boot_id"

// bootID returns the id of the host's current boot, or "" when it cannot
// be read (then every command sweeps, as before).
func bootID() string {
	b, err := os.ReadFile(bootIDFile)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// sweepDue reports whether workspace w needs a whole sweep: it is marked
// unfinished, its source's view is not mounted over it, or it was not
// swept since the host booted.
func (e *Engine) sweepDue(ctx context.Context, w *tine.Workspace) bool {
	wl := e.lay.Workspace(w.ID)
	if _, err := os.Lstat(wl.Unfinished()); err == nil {
		return true
	}
	if e.backends.stacking(w.Backend) {
		if _, err := os.Lstat(filepath.Join(w.Path, markerName)); err == nil {
			return true
		}
	}
	swept, err := os.ReadFile(wl.Swept())
	boot := bootID()
	if err != nil || boot == "" || string(swept) != boot {
		return true
	}
	return e.outOfLine(ctx, w)
}

// outOfLine reports whether workspace w has a run directory of a run the
// store does not have as active, a live run's view that is not mounted
// (a stacking backend's), or a layer directory the store has no record of
// (or the store cannot say).
func (e *Engine) outOfLine(ctx context.Context, w *tine.Workspace) bool {
	ws := w.ID
	runs, err1 := os.ReadDir(e.lay.Workspace(ws).Runs())
	layers, err2 := os.ReadDir(e.lay.Workspace(ws).Layers())
	if err1 != nil && !errors.Is(err1, os.ErrNotExist) || err2 != nil && !errors.Is(err2, os.ErrNotExist) {
		return true
	}
	stray := false
	err := e.store.View(ctx, func(tx tine.Tx) error {
		for _, d := range runs {
			r, err := tx.Run(d.Name())
			if err != nil {
				return err
			}
			if r.Workspace != ws || !r.Active() || e.backends.stacking(w.Backend) && !mounted(e.lay.Run(ws, r.ID)) {
				stray = true
				return nil
			}
		}
		for _, d := range layers {
			l, err := tx.Layer(d.Name())
			if err != nil {
				return err
			}
			if l.Workspace != ws {
				stray = true
				return nil
			}
		}
		return nil
	})
	return stray || err != nil
}

// markSwept records that workspace ws was swept whole in this boot with
// nothing left to put right. The caller holds the workspace's lock.
func (e *Engine) markSwept(ws string) {
	wl := e.lay.Workspace(ws)
	if err := os.WriteFile(wl.Swept(), []byte(bootID()), 0o600); err == nil {
		os.Remove(wl.Unfinished())
	}
}

// Sweep sweeps every workspace whole, whether or not something is known to
// be left there, then empties the trash: tine gc and the daemon's schedule
// run it. Workspaces another command is working on are left alone.
func (e *Engine) Sweep(ctx context.Context) error {
	if err := (&sweeper{e: e, all: true}).sweep(ctx); err != nil {
		return err
	}
	_, err := e.EmptyTrash(ctx, false)
	return err
}

// WatchSweep runs Sweep every interval until ctx ends: tine serve runs it,
// so what a command that died left is put right within interval even when
// no command opens the workspace. Between sweeps it empties the trash as
// soon as a release or discard of this engine fills it. Errors go to warn.
func (e *Engine) WatchSweep(ctx context.Context, every time.Duration) {
	go e.watchTrash(ctx)
	tick.Every(ctx, every, func() {
		if err := e.Sweep(ctx); err != nil && ctx.Err() == nil {
			e.warn("sweeping the state directory: %v", err)
		}
	})
}

// mounted reports whether run directory r's view is a mount: on another
// device than the directory it is in.
func mounted(r layout.Run) bool {
	dv, err1 := layer.Device(r.View())
	dr, err2 := layer.Device(r.Dir())
	return err1 == nil && err2 == nil && dv != dr
}

// storeCheckDue reports whether a command opening state directory home
// checks its store whole first: when a sweep may be due in a workspace (it
// is marked unfinished or was not swept since the host booted: a crash,
// a power cut) or there is none. Otherwise damage shows when a query
// reaches it, as tine.ErrStore; tine doctor always checks.
func storeCheckDue(home string) bool {
	dirs, err := workspaceDirs(home)
	if err != nil || len(dirs) == 0 {
		return true
	}
	boot := bootID()
	lay := layout.New(home)
	for _, d := range dirs {
		if _, err := os.Lstat(lay.Workspace(d).Unfinished()); err == nil {
			return true
		}
		if swept, err := os.ReadFile(lay.Workspace(d).Swept()); err != nil || boot == "" || string(swept) != boot {
			return true
		}
	}
	return false
}
