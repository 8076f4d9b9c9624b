package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/flock"
	"github.com/tinehq/tine/internal/mnt"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/layout"
	"golang.org/x/sys/unix"
)

// The trash (layout.Trash), under the state directory, holds what a
// committed release or discard has to delete: once the store has forgotten
// the workspace (or marked the run discarded), its state directory (or the
// run's) is unmounted and renamed there, one rename on one filesystem, and
// the command returns. The deletion, which costs the files, runs later:
// the daemon empties the trash as soon as a release or discard it served
// has filled it, and at every sweep (WatchSweep); tine gc empties it too,
// and a direct tine release or discard starts a tine gc --trash in the
// background. Unlike the quarantine, everything in the trash is garbage by
// a committed record: a crash before the rename leaves the directory where
// the sweeper finds it garbage (a finished release, a discarded run) and
// trashes it, a crash after it leaves the entry for the next emptying.
//
// An entry's name says what it is: <unix ns>-<kind>-<backend>-<ws>-<name>,
// so it needs no note beside it and the rename is the only step.

// Trashed is one entry of the trash.
type Trashed struct {
	Name      string `json:"name"`              // its name under $TINE_HOME/trash
	Dir       string `json:"dir"`               // where it is
	Kind      string `json:"kind"`              // KindWorkspace, KindRun or KindLayer
	Backend   string `json:"backend,omitempty"` // the workspace's backend, if known
	Workspace string `json:"workspace"`         // the workspace id it belonged to
	Bytes     int64  `json:"bytes"`
}

// noBackend stands in an entry's name for a backend nobody knew.
const noBackend = "unknown"

// trash renames dir, a workspace's or a run's state directory of workspace
// ws, into the trash, and tells the daemon's emptier (if one runs) that
// there is work. Whatever is mounted below dir must be unmounted first by
// the caller when it can be in use; the emptier unmounts the rest. A dir
// on another filesystem than the trash (a workspaces directory mounted
// apart) is deleted where it is instead, before trash returns.
func (e *Engine) trash(ctx context.Context, kind, backend, ws, dir string) error {
	if backend == "" {
		backend = noBackend
	}
	t := e.lay.Trash()
	if err := os.MkdirAll(t, 0o700); err != nil {
		return err
	}
	name := fmt.Sprintf("%d-%s-%s-%s-%s", e.now().UnixNano(), kind, backend, ws, filepath.Base(dir))
	err := os.Rename(dir, filepath.Join(t, name))
	if errors.Is(err, unix.EXDEV) {
		in := parseTrashed(name)
		in.Dir = dir
		return removeTrashed(ctx, e.backend, in)
	}
	if err != nil {
		return fmt.Errorf("moving %s into the trash: %w", dir, err)
	}
	select {
	case e.trashed <- struct{}{}:
	default:
	}
	return nil
}

// TrashPending reports whether this engine moved something into the trash
// that no emptier of this engine has taken up yet: a command that ran
// without the daemon's WatchSweep then has the trash emptied in the
// background (tine gc --trash).
func (e *Engine) TrashPending() bool { return len(e.trashed) > 0 }

// ListTrash returns the trash of state directory home, oldest first, with
// each entry's size when sizes is set (a walk of the entry).
func ListTrash(home string, sizes bool) ([]Trashed, error) {
	dir := layout.New(home).Trash()
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	out := make([]Trashed, 0, len(ents))
	for _, ent := range ents {
		t := parseTrashed(ent.Name())
		t.Dir = filepath.Join(dir, ent.Name())
		if sizes {
			t.Bytes, _ = fstree.DiskUsage(t.Dir)
		}
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// parseTrashed reads an entry's name; a name of another shape is an entry
// of unknown kind, deleted as a plain tree.
func parseTrashed(name string) Trashed {
	t := Trashed{Name: name, Kind: "unknown"}
	f := strings.SplitN(name, "-", 5)
	if len(f) != 5 {
		return t
	}
	if _, err := strconv.ParseInt(f[0], 10, 64); err != nil {
		return t
	}
	t.Kind, t.Workspace = f[1], f[3]
	if f[2] != noBackend {
		t.Backend = f[2]
	}
	return t
}

// EmptyTrash deletes every entry of the trash and returns how many it
// deleted. An entry with something still mounted below it that cannot be
// unmounted is left for a later emptying (nothing is deleted through a
// mount). When another process is emptying the trash it waits for it if
// wait is set, and otherwise returns at once.
func (e *Engine) EmptyTrash(ctx context.Context, wait bool) (int, error) {
	return emptyTrash(ctx, e.lay, e.backend, wait, e.warn)
}

// EmptyTrash empties the trash of state directory home without opening
// its store (what tine gc --trash runs in the background): Engine.EmptyTrash
// with the backends of opts (WithBackends).
func EmptyTrash(ctx context.Context, home string, wait bool, opts ...Option) (int, error) {
	o := &options{warnings: os.Stderr}
	for _, opt := range opts {
		opt(o)
	}
	backend := func(name string) (layer.Backend, error) {
		d, err := o.drivers.Lookup(name)
		if err != nil {
			return nil, err
		}
		return d.New(), nil
	}
	warn := func(format string, args ...any) { fmt.Fprintf(o.warnings, "tine: warning: "+format+"\n", args...) }
	return emptyTrash(ctx, layout.New(home), backend, wait, warn)
}

// emptyTrash is EmptyTrash, holding the trash directory's own lock (so it
// creates nothing in the state directory, which may be going away).
func emptyTrash(ctx context.Context, lay layout.Layout, backend func(string) (layer.Backend, error), wait bool, warn func(string, ...any)) (int, error) {
	unlock, err := flock.Dir(lay.Trash(), wait)
	if errors.Is(err, fs.ErrNotExist) || !wait && errors.Is(err, tine.ErrBusy) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer unlock()
	ts, err := ListTrash(lay.Root(), false)
	if err != nil || len(ts) == 0 {
		return 0, err
	}
	busy, err := unmountTrash(lay.Trash(), warn)
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, t := range ts {
		if busy[t.Dir] {
			continue
		}
		if err := removeTrashed(ctx, backend, t); err != nil {
			errs = append(errs, fmt.Errorf("emptying the trash: %s: %w", t.Dir, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// unmountTrash unmounts whatever is mounted in the trash (found in one
// read of the mount table) and returns the entries where something stays
// mounted.
func unmountTrash(dir string, warn func(string, ...any)) (map[string]bool, error) {
	mounts, err := mnt.MountsBelow(dir)
	if err != nil {
		return nil, err
	}
	busy := map[string]bool{}
	for _, m := range mounts {
		if err := mnt.UnmountAll(m); err != nil {
			busy[trashEntryOf(dir, m)] = true
			warn("leaving %s in the trash: %s is still mounted: %v", trashEntryOf(dir, m), m, err)
		}
	}
	return busy, nil
}

// trashEntryOf returns the entry of trash dir that path is inside.
func trashEntryOf(dir, path string) string {
	rel, err := filepath.Rel(dir, path)
	if err != nil {
		return path
	}
	return filepath.Join(dir, strings.SplitN(rel, string(filepath.Separator), 2)[0])
}

// removeTrashed deletes one entry of the trash: through its backend when
// it is known (a btrfs view or layer is a subvolume), then as a tree.
func removeTrashed(ctx context.Context, backend func(string) (layer.Backend, error), t Trashed) error {
	if t.Backend != "" {
		be, err := backend(t.Backend)
		if err != nil {
			return err
		}
		switch t.Kind {
		case KindWorkspace:
			err = removeWorkspaceFiles(ctx, be, layout.WorkspaceAt(t.Dir))
		case KindRun:
			err = be.Deactivate(ctx, layer.Run{ID: filepath.Base(t.Dir), Dir: t.Dir, View: filepath.Join(t.Dir, "view")})
		case KindLayer:
			err = be.RemoveLayer(ctx, t.Dir)
		}
		if err != nil {
			return err
		}
	}
	return fstree.Purge(t.Dir)
}

// removeWorkspaceFiles deletes, through backend be, every run's view and
// every layer of the workspace state directory w.
func removeWorkspaceFiles(ctx context.Context, be layer.Backend, w layout.Workspace) error {
	runs, _ := os.ReadDir(w.Runs())
	for _, r := range runs {
		dir := w.Run(r.Name()).Dir()
		if err := be.Deactivate(ctx, layer.Run{ID: r.Name(), Dir: dir, View: filepath.Join(dir, "view")}); err != nil {
			return err
		}
	}
	layers, _ := os.ReadDir(w.Layers())
	for _, l := range layers {
		if err := be.RemoveLayer(ctx, w.Layer(l.Name())); err != nil {
			return err
		}
	}
	return nil
}

// watchTrash empties the trash each time a release or discard fills it,
// until ctx ends.
func (e *Engine) watchTrash(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.trashed:
			if _, err := e.EmptyTrash(ctx, true); err != nil && ctx.Err() == nil {
				e.warn("%v", err)
			}
		}
	}
}
