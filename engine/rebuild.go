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
	"github.com/tinehq/tine/internal/flock"
	"github.com/tinehq/tine/layout"
)

// RebuildResult says what Rebuild found and did.
type RebuildResult struct {
	Home       string             `json:"home"`
	Was        string             `json:"was"`       // the store's state before (one of the Store* states)
	StoreID    string             `json:"store_id"`  // the id of the rebuilt store
	SetAside   []Quarantined      `json:"set_aside"` // the old store's files, moved into the quarantine
	Workspaces []RebuiltWorkspace `json:"workspaces"`
	Skipped    []string           `json:"skipped"` // what could not be rebuilt, and why, one line each
	NotRebuilt string             `json:"not_rebuilt"`
}

// RebuiltWorkspace is one workspace Rebuild recorded again.
type RebuiltWorkspace struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Path     string `json:"path"`
	Backend  string `json:"backend"`
	Runs     int    `json:"runs"`
	Versions int    `json:"versions"`
	Layers   int    `json:"layers"`
	Groups   int    `json:"groups"`
}

// notRebuilt is what a rebuilt store lacks.
const notRebuilt = "the event log (tine log, tine events), approvals and capabilities (issued again to live runs) are not rebuilt"

// wsRecords is what the manifests of one workspace directory say.
type wsRecords struct {
	w        *tine.Workspace
	runs     []*tine.Run
	versions []*tine.Version
	layers   []*tine.Layer
	groups   []*tine.Group
}

// Rebuild makes the store of state directory home again from the manifests
// its workspace directories carry (see manifest.go), when the store is
// missing, empty, damaged, foreign or knows none of the workspaces. A store
// that is usable is left alone (wrapping tine.ErrState: nothing to do). The
// old store's files are moved into the quarantine, never deleted; the new
// store gets the id the workspace directories were made with. Then an
// engine is opened, whose sweep mounts the views again and moves into the
// quarantine whatever no manifest vouched for. It takes Open's options
// and, like Open, needs WithStore and WithBackends.
func Rebuild(ctx context.Context, home string, opts ...Option) (*RebuildResult, error) {
	o, home, err := openingOptions(home, opts)
	if err != nil {
		return nil, err
	}
	rep, err := o.rebuildStore(ctx, home)
	if err != nil {
		return rep, err
	}
	e, err := Open(ctx, home, opts...)
	if err != nil {
		return rep, fmt.Errorf("opening the rebuilt store: %w", err)
	}
	defer e.Close()
	for _, rw := range rep.Workspaces {
		if err := e.reissueCaps(ctx, rw.ID); err != nil {
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("workspace %s: issuing capabilities to its runs: %v", rw.Name, err))
		}
	}
	return rep, nil
}

// reissueCaps gives every live run of workspace ws a capability, which a
// rebuilt store lacks.
func (e *Engine) reissueCaps(ctx context.Context, ws string) error {
	var w *tine.Workspace
	var runs []*tine.Run
	err := e.store.View(ctx, func(tx tine.Tx) error {
		var err error
		if w, err = tx.Workspace(ws); err != nil {
			return err
		}
		runs, err = tx.Runs(tine.RunFilter{Workspace: ws, State: tine.StateActive})
		return err
	})
	if err != nil || len(runs) == 0 {
		return err
	}
	return e.ctl.IssueCaps(ctx, w, runs...)
}

// rebuildStore does Rebuild's work up to the new store's last commit.
func (o *options) rebuildStore(ctx context.Context, home string) (*RebuildResult, error) {
	unlock, ok := flock.Try(layout.New(home).WorkspacesLock())
	if !ok {
		return nil, fmt.Errorf("another tine command holds %s: %w", layout.New(home).WorkspacesLock(), tine.ErrBusy)
	}
	defer unlock()
	if o.server != "" {
		return nil, fmt.Errorf("tine doctor --rebuild makes a SQLite store file again; the store %s is on a server, whose own backups restore it: %w", o.server, tine.ErrUnsupported)
	}
	st, c, err := o.checkStore(ctx, home, false, true)
	if err != nil {
		return nil, err
	}
	if st != nil {
		st.Close()
	}
	rep := &RebuildResult{Home: home, Was: c.State, SetAside: []Quarantined{}, Workspaces: []RebuiltWorkspace{}, Skipped: []string{}, NotRebuilt: notRebuilt}
	if c.Usable() {
		return rep, fmt.Errorf("the store %s is %s: nothing to rebuild (tine doctor --rebuild only replaces a store that is missing, empty, damaged or not the workspaces' own): %w", c.Path, c.State, tine.ErrState)
	}
	var all []*wsRecords
	for _, d := range c.Dirs {
		recs, skipped, err := readWorkspaceManifests(layout.New(home).Workspace(d).Dir())
		rep.Skipped = append(rep.Skipped, skipped...)
		if err != nil {
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("workspace directory %s: %v (the next command moves it into the quarantine)", d, err))
			continue
		}
		all = append(all, recs)
	}
	all = newestPerKey(all, rep)
	if len(all) == 0 {
		return rep, fmt.Errorf("no workspace directory in %s has a manifest (workspace.json) to rebuild from; nothing was changed (tine doctor --set-aside is the way on): %w",
			layout.New(home).Workspaces(), tine.ErrStore)
	}
	for _, r := range all {
		unlockWs, ok := flock.Try(layout.New(home).Workspace(r.w.ID).Lock())
		if !ok {
			return rep, fmt.Errorf("another tine command holds workspace %s: %w", r.w.ID, tine.ErrBusy)
		}
		defer unlockWs()
	}
	now := time.Now()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if _, err := os.Lstat(c.Path + suffix); err != nil {
			continue
		}
		q, err := moveAside(home, now, Quarantined{Kind: KindStore, From: c.Path + suffix, Reason: "set aside by tine doctor --rebuild: the store was " + c.State})
		if err != nil {
			return rep, err
		}
		rep.SetAside = append(rep.SetAside, *q)
	}
	st, err = o.open(c.Path)
	if err != nil {
		return rep, err
	}
	defer st.Close()
	if c.Marker != "" {
		if err := st.SetID(ctx, c.Marker, now); err != nil {
			return rep, err
		}
	}
	if rep.StoreID, _, err = st.ID(ctx); err != nil {
		return rep, err
	}
	if err := writeMarker(home, rep.StoreID); err != nil {
		return rep, fmt.Errorf("state directory: %w", err)
	}
	for _, r := range all {
		rw, err := insertRecords(ctx, st, r, now)
		if err != nil {
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("workspace %s (%s): %v (the next command moves it into the quarantine)", r.w.Name, r.w.ID, err))
			continue
		}
		rep.Workspaces = append(rep.Workspaces, rw)
	}
	return rep, nil
}

// newestPerKey keeps, of workspaces claiming the same id, name or path, the
// one created last, and says which it left out.
func newestPerKey(all []*wsRecords, rep *RebuildResult) []*wsRecords {
	sort.SliceStable(all, func(i, j int) bool { return all[i].w.CreatedAt.After(all[j].w.CreatedAt) })
	seen := map[string]bool{}
	var out []*wsRecords
	for _, r := range all {
		keys := []string{"id " + r.w.ID, "name " + r.w.Name, "path " + r.w.Path}
		dup := ""
		for _, k := range keys {
			if seen[k] {
				dup = k
			}
		}
		if dup != "" {
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("workspace %s (%s): a newer workspace has the same %s", r.w.Name, r.w.ID, dup))
			continue
		}
		for _, k := range keys {
			seen[k] = true
		}
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].w.CreatedAt.Before(out[j].w.CreatedAt) })
	return out
}

// readWorkspaceManifests reads the manifests of workspace directory dir:
// those whose files are gone (a version naming a missing layer, a run based
// on a missing version) are left out and said so.
func readWorkspaceManifests(dir string) (*wsRecords, []string, error) {
	var wm wsManifest
	if err := readManifest(layout.WorkspaceAt(dir).Record(), &wm); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("no %s", workspaceFile)
		}
		return nil, nil, err
	}
	if wm.Workspace == nil || wm.Workspace.ID != filepath.Base(dir) {
		return nil, nil, fmt.Errorf("%s does not describe this workspace", workspaceFile)
	}
	id := wm.Workspace.ID
	recs := &wsRecords{w: wm.Workspace}
	var skipped []string
	skip := func(format string, args ...any) {
		skipped = append(skipped, fmt.Sprintf("workspace %s: ", wm.Workspace.Name)+fmt.Sprintf(format, args...))
	}
	layers := map[string]*tine.Layer{}
	versions := map[string]bool{}
	ents, _ := os.ReadDir(layout.WorkspaceAt(dir).Versions())
	for _, ent := range ents {
		if !isManifestName(ent.Name()) {
			continue
		}
		var vm versionManifest
		if err := readManifest(filepath.Join(layout.WorkspaceAt(dir).Versions(), ent.Name()), &vm); err != nil {
			skip("version manifest %s: %v", ent.Name(), err)
			continue
		}
		v := vm.Version
		if v == nil || v.Workspace != id || v.ID+".json" != ent.Name() || len(vm.Layers) != len(v.Layers) {
			skip("version manifest %s does not describe a version of this workspace", ent.Name())
			continue
		}
		missing := ""
		for i, l := range v.Layers {
			if vm.Layers[i] == nil || vm.Layers[i].ID != l {
				missing = l + " (no record)"
			} else if _, err := os.Lstat(layout.WorkspaceAt(dir).Layer(l)); err != nil {
				missing = l
			}
		}
		if missing != "" {
			skip("version %s: its layer %s is missing", v.ID, missing)
			continue
		}
		for _, l := range vm.Layers {
			layers[l.ID] = l
		}
		versions[v.ID] = true
		recs.versions = append(recs.versions, v)
	}
	for _, l := range layers {
		recs.layers = append(recs.layers, l)
	}
	ents, _ = os.ReadDir(layout.WorkspaceAt(dir).Groups())
	for _, ent := range ents {
		var gm groupManifestFile
		if err := readManifest(layout.WorkspaceAt(dir).Group(ent.Name()).Record(), &gm); err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				skip("group manifest %s: %v", ent.Name(), err)
			}
			continue
		}
		if gm.Group == nil || gm.Group.ID != ent.Name() || gm.Group.Workspace != id {
			skip("group manifest %s does not describe a group of this workspace", ent.Name())
			continue
		}
		recs.groups = append(recs.groups, gm.Group)
	}
	byID := map[string]*tine.Run{}
	consider := func(path, name string) {
		var rm runManifest
		if err := readManifest(path, &rm); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				skip("run directory %s has no %s (the next command moves it into the quarantine)", name, runManifestFile)
			} else {
				skip("run manifest %s: %v", path, err)
			}
			return
		}
		r := rm.Run
		if r == nil || r.ID != name || r.Workspace != id {
			skip("run manifest %s does not describe a run of this workspace", path)
			return
		}
		if o := byID[r.ID]; o == nil || r.UpdatedAt.After(o.UpdatedAt) {
			byID[r.ID] = r // of two manifests of one run, the newest
		}
	}
	ents, _ = os.ReadDir(layout.WorkspaceAt(dir).Runs())
	for _, ent := range ents {
		consider(layout.WorkspaceAt(dir).Run(ent.Name()).Record(), ent.Name())
	}
	ents, _ = os.ReadDir(layout.WorkspaceAt(dir).DiscardedDir())
	for _, ent := range ents {
		if isManifestName(ent.Name()) {
			consider(filepath.Join(layout.WorkspaceAt(dir).DiscardedDir(), ent.Name()), strings.TrimSuffix(ent.Name(), ".json"))
		}
	}
	names := map[string]*tine.Run{}
	for _, r := range byID {
		if r.Active() && !versions[r.Base] {
			skip("run %s: the version its view was made from, %s, is missing", r.Name, r.Base)
			continue
		}
		if o := names[r.Name]; o != nil {
			// Two runs of one name: the manifest written last wins.
			if !r.UpdatedAt.After(o.UpdatedAt) {
				skip("run %s (%s): a newer run has the same name", r.Name, r.ID)
				continue
			}
			skip("run %s (%s): a newer run has the same name", o.Name, o.ID)
		}
		names[r.Name] = r
	}
	for _, r := range names {
		recs.runs = append(recs.runs, r)
	}
	// Records of one instant (the forks of one call) keep their order: by
	// name, shorter first, so fork-2 comes before fork-10.
	sort.Slice(recs.runs, func(i, j int) bool {
		a, b := recs.runs[i], recs.runs[j]
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.Before(b.CreatedAt)
		}
		if len(a.Name) != len(b.Name) {
			return len(a.Name) < len(b.Name)
		}
		return a.Name < b.Name
	})
	sort.Slice(recs.versions, func(i, j int) bool {
		return byTime(recs.versions[i].CreatedAt, recs.versions[j].CreatedAt, recs.versions[i].ID, recs.versions[j].ID)
	})
	sort.Slice(recs.layers, func(i, j int) bool {
		return byTime(recs.layers[i].CreatedAt, recs.layers[j].CreatedAt, recs.layers[i].ID, recs.layers[j].ID)
	})
	sort.Slice(recs.groups, func(i, j int) bool {
		return byTime(recs.groups[i].CreatedAt, recs.groups[j].CreatedAt, recs.groups[i].ID, recs.groups[j].ID)
	})
	return recs, skipped, nil
}

// insertRecords puts one workspace's records into st in one transaction,
// with an event saying it was rebuilt.
func insertRecords(ctx context.Context, st tine.Store, r *wsRecords, now time.Time) (RebuiltWorkspace, error) {
	rw := RebuiltWorkspace{ID: r.w.ID, Name: r.w.Name, Path: r.w.Path, Backend: r.w.Backend,
		Runs: len(r.runs), Versions: len(r.versions), Layers: len(r.layers), Groups: len(r.groups)}
	err := st.Update(ctx, func(tx tine.Tx) error {
		if err := tx.PutWorkspace(r.w); err != nil {
			return err
		}
		for _, l := range r.layers {
			if err := tx.PutLayer(l); err != nil {
				return err
			}
		}
		for _, v := range r.versions {
			if err := tx.PutVersion(v); err != nil {
				return err
			}
		}
		for _, g := range r.groups {
			if err := tx.PutGroup(g); err != nil {
				return err
			}
		}
		var live []string
		for _, run := range r.runs {
			if err := tx.PutRun(run); err != nil {
				return err
			}
			live = append(live, run.Name)
		}
		detail, _ := json.Marshal(map[string]any{"runs": live, "versions": len(r.versions), "layers": len(r.layers), "groups": len(r.groups)})
		return tx.AppendEvent(&tine.Event{Time: now.UTC(), Workspace: r.w.ID, Kind: tine.EventRebuilt, Detail: detail})
	})
	return rw, err
}

// byTime orders by time, then id.
func byTime(a, b time.Time, ida, idb string) bool {
	if !a.Equal(b) {
		return a.Before(b)
	}
	return ida < idb
}
