package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/atomicfile"
	"github.com/tinehq/tine/internal/flock"
	"github.com/tinehq/tine/internal/mnt"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/layout"
)

// The quarantine (layout.Quarantine), under the state directory, holds
// what the sweeper found and could not prove to be garbage: directories the
// store has no record of. Each entry is moved there by a rename (it stays
// on the state directory's filesystem) with a note beside it, NAME.json,
// saying where it came from and why. Only tine doctor --purge deletes
// entries.

// Kinds of quarantined entries.
const (
	KindWorkspace = "workspace" // a whole workspace directory
	KindRun       = "run"       // a run's directory (view, upper, journals)
	KindLayer     = "layer"     // a layer
	KindStore     = "store"     // a store file set aside by tine doctor --set-aside
)

// Quarantined is one entry of the quarantine: a directory (or store file)
// moved aside instead of deleted.
type Quarantined struct {
	Name      string    `json:"name"`              // its name under $TINE_HOME/quarantine
	Dir       string    `json:"dir"`               // where it is now
	From      string    `json:"from"`              // where it was
	Kind      string    `json:"kind"`              // one of the Kind* constants, or "unknown" without a note
	Workspace string    `json:"workspace"`         // the workspace id it belonged to
	Backend   string    `json:"backend,omitempty"` // the workspace's backend, if the store knew it
	Reason    string    `json:"reason"`
	Time      time.Time `json:"time"`
	Bytes     int64     `json:"bytes"`
}

// quarantine moves dir aside, telling the user where it went.
func (e *Engine) quarantine(kind, ws, backend, dir, reason string) {
	q, err := moveAside(e.home, e.now(), Quarantined{Kind: kind, Workspace: ws, Backend: backend, From: dir, Reason: reason})
	if err != nil {
		e.warn("%s: %s, and moving it aside failed, so it stays where it is: %v", dir, reason, err)
		return
	}
	e.warn("%s: %s; moved aside to %s (tine doctor lists it, tine doctor --purge deletes it)", dir, reason, q.Dir)
}

// moveAside renames q.From into the quarantine of home, writing its note
// first, and syncs both directories so the move survives a power cut.
func moveAside(home string, now time.Time, q Quarantined) (*Quarantined, error) {
	qdir := layout.New(home).Quarantine()
	if err := os.MkdirAll(qdir, 0o700); err != nil {
		return nil, err
	}
	q.Time = now.UTC()
	base := q.Time.Format("20060102T150405Z")
	for _, part := range []string{q.Workspace, filepath.Base(q.From)} {
		if part != "" && !strings.HasSuffix(base, "-"+part) {
			base += "-" + part
		}
	}
	q.Name = base
	for i := 2; ; i++ {
		if _, err := os.Lstat(filepath.Join(qdir, q.Name)); errors.Is(err, os.ErrNotExist) {
			break
		}
		q.Name = fmt.Sprintf("%s-%d", base, i)
	}
	q.Dir = filepath.Join(qdir, q.Name)
	note, _ := json.MarshalIndent(q, "", "  ")
	if err := atomicfile.Write(q.Dir+".json", note, 0o644, atomicfile.Durable); err != nil {
		return nil, err
	}
	if err := os.Rename(q.From, q.Dir); err != nil {
		os.Remove(q.Dir + ".json")
		return nil, err
	}
	return &q, errors.Join(atomicfile.SyncDir(qdir), atomicfile.SyncDir(filepath.Dir(q.From)))
}

// ListQuarantine returns the quarantine of state directory home, oldest first.
func ListQuarantine(home string) ([]Quarantined, error) {
	qdir := layout.New(home).Quarantine()
	ents, err := os.ReadDir(qdir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Quarantined
	for _, ent := range ents {
		if strings.HasSuffix(ent.Name(), ".json") || strings.HasSuffix(ent.Name(), ".tmp") {
			continue
		}
		q := Quarantined{Name: ent.Name(), Kind: "unknown", Reason: "no note"}
		if b, err := os.ReadFile(filepath.Join(qdir, ent.Name()+".json")); err == nil {
			_ = json.Unmarshal(b, &q)
		}
		q.Dir = filepath.Join(qdir, ent.Name())
		q.Bytes, _ = fstree.DiskUsage(q.Dir)
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Purge deletes every entry of the quarantine of home, and returns them.
// It is the only way tine deletes what the store had no record of. A layer
// is deleted through its backend when that is registered (WithBackends; a
// btrfs layer is a read-only subvolume), otherwise as a plain tree.
func Purge(ctx context.Context, home string, opts ...Option) ([]Quarantined, error) {
	o := &options{}
	for _, opt := range opts {
		opt(o)
	}
	unlock, ok := flock.Try(layout.New(home).WorkspacesLock())
	if !ok {
		return nil, fmt.Errorf("another tine command holds %s: %w", layout.New(home).WorkspacesLock(), tine.ErrBusy)
	}
	defer unlock()
	qs, err := ListQuarantine(home)
	if err != nil {
		return nil, err
	}
	var done []Quarantined
	for _, q := range qs {
		// A fork's view is nobody's workspace path, but a whole workspace's
		// source view may still be bound on one.
		if mp := mountBelow(q.Dir); mp != "" && q.Kind != KindRun && q.Kind != KindLayer {
			return done, fmt.Errorf("not purging %s: %s is still mounted (a view someone may be using, perhaps at a workspace path); unmount it first: %w", q.Dir, mp, tine.ErrBusy)
		}
		if err := removeQuarantined(ctx, o.drivers, q); err != nil {
			return done, fmt.Errorf("purging %s: %w", q.Dir, err)
		}
		os.Remove(q.Dir + ".json")
		done = append(done, q)
	}
	return done, nil
}

// mountBelow returns a mount point inside dir, or "" if there is none.
func mountBelow(dir string) string {
	found := ""
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == dir {
			return nil
		}
		if ok, _ := mnt.IsMountpoint(p); ok {
			found = p
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// removeQuarantined deletes one entry, through its backend for a layer
// (a btrfs layer is a read-only subvolume) when it is registered.
func removeQuarantined(ctx context.Context, ds layer.Drivers, q Quarantined) error {
	if q.Kind == KindLayer && q.Backend != "" {
		if d, err := ds.Lookup(q.Backend); err == nil {
			return d.New().RemoveLayer(ctx, q.Dir)
		}
	}
	return removeTree(q.Dir)
}

// SetAside makes a refused state directory usable again without deleting
// anything: every workspace directory the store cannot vouch for, and a
// store file that is empty or damaged, is moved into the quarantine, so the
// next command starts with the store that is there (or a fresh one). It
// returns what it moved; a usable state directory is left as it is. It
// needs WithStore.
func SetAside(ctx context.Context, home string, opts ...Option) ([]Quarantined, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	unlock, ok := flock.Try(layout.New(home).WorkspacesLock())
	if !ok {
		return nil, fmt.Errorf("another tine command holds %s: %w", layout.New(home).WorkspacesLock(), tine.ErrBusy)
	}
	defer unlock()
	st, c, err := o.checkStore(ctx, home, false, true)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	if st != nil {
		for _, d := range c.Dirs {
			if st.View(ctx, func(tx tine.Tx) error { _, err := tx.Workspace(d); return err }) == nil {
				known[d] = true
			}
		}
		st.Close()
	}
	if c.Usable() {
		return nil, nil
	}
	var moved []Quarantined
	now := time.Now()
	if c.State == StoreEmpty || c.State == StoreDamaged {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if _, err := os.Lstat(c.Path + suffix); err != nil {
				continue
			}
			q, err := moveAside(home, now, Quarantined{Kind: KindStore, From: c.Path + suffix, Reason: "the store was " + c.State})
			if err != nil {
				return moved, err
			}
			moved = append(moved, *q)
		}
	}
	for _, d := range c.Dirs {
		if known[d] {
			continue
		}
		unlockWs, ok := flock.Try(layout.New(home).Workspace(d).Lock())
		if !ok {
			return moved, fmt.Errorf("another tine command holds workspace %s: %w", d, tine.ErrBusy)
		}
		q, err := moveAside(home, now, Quarantined{Kind: KindWorkspace, Workspace: d,
			From: layout.New(home).Workspace(d).Dir(), Reason: "set aside by tine doctor: the store was " + c.State})
		unlockWs()
		if err != nil {
			return moved, err
		}
		moved = append(moved, *q)
	}
	if err := os.Remove(layout.New(home).StoreID()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return moved, err
	}
	return moved, nil
}
