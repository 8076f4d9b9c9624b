package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/atomicfile"
	"github.com/tinehq/tine/internal/flock"
	"github.com/tinehq/tine/layout"
)

// Manifests: each workspace, run, version and group of a workspace
// directory carries its own store record in a small JSON file beside its
// files, so that tine doctor --rebuild can make the store again from the
// state directory alone:
//
//	workspaces/<ws>/workspace.json      the workspace
//	workspaces/<ws>/runs/<r>/run.json   the run (rewritten whenever its record changes)
//	workspaces/<ws>/discarded/<r>.json  a discarded run (its directory is removed)
//	workspaces/<ws>/versions/<v>.json   the version and the records of its layers, bottom first
//	workspaces/<ws>/groups/<g>/group.json
//
// A layer's own directory is its files (an overlay lower directory), so its
// record lives in the manifests of the versions that name it.
//
// The engine's store is wrapped (manifestStore) so that every transaction
// that commits writes the manifests of the records it put, updated or
// deleted, after the commit and before Update returns: whatever function
// changes a record, the files follow. A crash between the commit and the
// manifest leaves the manifest one change behind; the store, while it is
// there, is what tine trusts.
const (
	manifestFormat  = 1
	workspaceFile   = "workspace.json"
	runManifestFile = "run.json"
	versionsDir     = "versions"
	discardedDir    = "discarded"
)

// wsManifest is workspace.json.
type wsManifest struct {
	Format    int             `json:"format"`
	Workspace *tine.Workspace `json:"workspace"`
}

// runManifest is runs/<r>/run.json.
type runManifest struct {
	Format int       `json:"format"`
	Run    *tine.Run `json:"run"`
}

// versionManifest is versions/<v>.json.
type versionManifest struct {
	Format  int           `json:"format"`
	Version *tine.Version `json:"version"`
	Layers  []*tine.Layer `json:"layers"` // the records of Version.Layers, in the same order
}

// groupManifestFile is groups/<g>/group.json.
type groupManifestFile struct {
	Format int         `json:"format"`
	Group  *tine.Group `json:"group"`
}

// manifestStore is the engine's store: every committed Update writes the
// manifests of what it changed.
type manifestStore struct {
	tine.Store
	home string
	warn func(format string, args ...any)
}

// Update runs fn like the store's Update and, once it has committed, brings
// the manifests of the records fn changed in line with the store. A
// manifest that cannot be written is a warning, not a failure: the
// operation has committed.
func (s *manifestStore) Update(ctx context.Context, fn func(tine.Tx) error) error {
	var rec *recordingTx
	err := s.Store.Update(ctx, func(tx tine.Tx) error {
		rec = &recordingTx{Tx: tx, ws: map[string]*touched{}}
		return fn(rec)
	})
	if err != nil || rec == nil {
		return err
	}
	for ws, t := range rec.ws {
		if err := s.writeManifests(ctx, ws, t); err != nil {
			s.warn("workspace %s: writing its manifests (tine doctor --rebuild reads them): %v", ws, err)
		}
	}
	return nil
}

// touched is what one transaction changed in one workspace.
type touched struct {
	workspace, deleted bool
	runs, versions     map[string]bool
	groups             map[string]bool
	goneRuns           map[string]bool
	goneVersions       map[string]bool
	goneGroups         map[string]bool
}

// recordingTx notes which records a transaction changes.
type recordingTx struct {
	tine.Tx
	ws map[string]*touched
}

func (t *recordingTx) of(ws string) *touched {
	if t.ws[ws] == nil {
		t.ws[ws] = &touched{runs: map[string]bool{}, versions: map[string]bool{}, groups: map[string]bool{},
			goneRuns: map[string]bool{}, goneVersions: map[string]bool{}, goneGroups: map[string]bool{}}
	}
	return t.ws[ws]
}

func (t *recordingTx) PutWorkspace(w *tine.Workspace) error {
	err := t.Tx.PutWorkspace(w)
	if err == nil {
		t.of(w.ID).workspace = true
	}
	return err
}

func (t *recordingTx) DeleteWorkspace(id string) error {
	err := t.Tx.DeleteWorkspace(id)
	if err == nil {
		t.of(id).deleted = true
	}
	return err
}

func (t *recordingTx) PutRun(r *tine.Run) error {
	err := t.Tx.PutRun(r)
	if err == nil {
		t.of(r.Workspace).runs[r.ID] = true
	}
	return err
}

func (t *recordingTx) UpdateRun(r *tine.Run) error {
	err := t.Tx.UpdateRun(r)
	if err == nil {
		t.of(r.Workspace).runs[r.ID] = true
	}
	return err
}

func (t *recordingTx) DeleteRun(id string) error {
	r, _ := t.Tx.Run(id)
	err := t.Tx.DeleteRun(id)
	if err == nil && r != nil {
		t.of(r.Workspace).goneRuns[id] = true
	}
	return err
}

func (t *recordingTx) PutVersion(v *tine.Version) error {
	err := t.Tx.PutVersion(v)
	if err == nil {
		t.of(v.Workspace).versions[v.ID] = true
	}
	return err
}

func (t *recordingTx) DeleteVersion(id string) error {
	v, _ := t.Tx.Version(id)
	err := t.Tx.DeleteVersion(id)
	if err == nil && v != nil {
		t.of(v.Workspace).goneVersions[id] = true
	}
	return err
}

func (t *recordingTx) PutGroup(g *tine.Group) error {
	err := t.Tx.PutGroup(g)
	if err == nil {
		t.of(g.Workspace).groups[g.ID] = true
	}
	return err
}

func (t *recordingTx) DeleteGroup(id string) error {
	g, _ := t.Tx.Group(id)
	err := t.Tx.DeleteGroup(id)
	if err == nil && g != nil {
		t.of(g.Workspace).goneGroups[id] = true
	}
	return err
}

// writeManifests writes, under the workspace's manifest lock, the manifests
// of what t says changed, from the store as it is now (so of two commands
// writing the same run's manifest, the later record wins).
func (s *manifestStore) writeManifests(ctx context.Context, ws string, t *touched) error {
	dir := layout.New(s.home).Workspace(ws).Dir()
	if t.deleted {
		err := os.Remove(layout.WorkspaceAt(dir).Record())
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	if _, err := os.Stat(dir); err != nil {
		return err
	}
	unlock, err := flock.Lock(layout.WorkspaceAt(dir).ManifestLock())
	if err != nil {
		return err
	}
	defer unlock()
	var errs []error
	err = s.Store.View(ctx, func(tx tine.Tx) error {
		if t.workspace {
			w, err := tx.Workspace(ws)
			if err != nil {
				return err
			}
			errs = append(errs, writeManifest(layout.WorkspaceAt(dir).Record(), wsManifest{manifestFormat, w}))
		}
		for id := range t.runs {
			r, err := tx.Run(id)
			if errors.Is(err, tine.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			errs = append(errs, writeRunManifest(dir, r))
		}
		for id := range t.versions {
			v, err := tx.Version(id)
			if errors.Is(err, tine.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			errs = append(errs, writeVersionManifest(tx, dir, v))
		}
		for id := range t.groups {
			g, err := tx.Group(id)
			if errors.Is(err, tine.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			errs = append(errs, writeGroupManifest(dir, g))
		}
		return nil
	})
	errs = append(errs, err)
	for id := range t.goneRuns {
		errs = append(errs, removeManifest(layout.WorkspaceAt(dir).Run(id).Record()),
			removeManifest(layout.WorkspaceAt(dir).Discarded(id)))
	}
	for id := range t.goneVersions {
		errs = append(errs, removeManifest(layout.WorkspaceAt(dir).Version(id)))
	}
	for id := range t.goneGroups {
		errs = append(errs, removeManifest(layout.WorkspaceAt(dir).Group(id).Record()))
	}
	return errors.Join(errs...)
}

// writeRunManifest writes r's manifest into its directory. A discarded
// run's goes to discarded/<r>.json as well, since its directory is about to
// be removed; of two manifests of one run, rebuild takes the one updated
// last.
func writeRunManifest(wsDir string, r *tine.Run) error {
	m := runManifest{manifestFormat, r}
	var err error
	if r.State == tine.StateDiscarded {
		if err = os.MkdirAll(layout.WorkspaceAt(wsDir).DiscardedDir(), 0o700); err == nil {
			err = writeManifest(layout.WorkspaceAt(wsDir).Discarded(r.ID), m)
		}
	}
	rd := layout.WorkspaceAt(wsDir).Run(r.ID)
	if _, serr := os.Stat(rd.Dir()); errors.Is(serr, os.ErrNotExist) {
		return err
	}
	return errors.Join(err, writeManifest(rd.Record(), m))
}

func writeVersionManifest(tx tine.Tx, wsDir string, v *tine.Version) error {
	m := versionManifest{Format: manifestFormat, Version: v, Layers: []*tine.Layer{}}
	for _, id := range v.Layers {
		l, err := tx.Layer(id)
		if err != nil {
			return fmt.Errorf("version %s: layer %s: %w", v.ID, id, err)
		}
		m.Layers = append(m.Layers, l)
	}
	if err := os.MkdirAll(layout.WorkspaceAt(wsDir).Versions(), 0o700); err != nil {
		return err
	}
	return writeManifest(layout.WorkspaceAt(wsDir).Version(v.ID), m)
}

func writeGroupManifest(wsDir string, g *tine.Group) error {
	gd := layout.WorkspaceAt(wsDir).Group(g.ID)
	if err := os.MkdirAll(gd.Dir(), 0o700); err != nil {
		return err
	}
	return writeManifest(gd.Record(), groupManifestFile{manifestFormat, g})
}

// writeManifest writes v as JSON at path atomically and whole (a temporary
// file, fsync, rename), unless path already holds exactly that. The
// directory is not synced after the rename: a crash may leave the manifest
// one change behind (the store is what tine trusts while it is there), but
// never cut short. Syncing it too cost a fork three more journal commits.
func writeManifest(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
		return nil
	}
	return atomicfile.Write(path, b, 0o644, atomicfile.Whole)
}

func removeManifest(path string) error {
	err := os.Remove(path)
	if err == nil || errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// backfillManifests writes every manifest of each workspace of this state
// directory that has no workspace.json yet (one made before manifests, or whose manifests were
// interrupted), so a store lost later can still be rebuilt.
func (e *Engine) backfillManifests(ctx context.Context) {
	ms, ok := e.store.(*manifestStore)
	if !ok {
		return
	}
	var all []*tine.Workspace
	if err := e.store.View(ctx, func(tx tine.Tx) error {
		var err error
		all, err = tx.Workspaces()
		return err
	}); err != nil {
		return
	}
	for _, w := range all {
		if _, err := os.Stat(e.lay.Workspace(w.ID).Record()); !errors.Is(err, os.ErrNotExist) {
			continue
		}
		// A store shared by several state directories (the nodes of a
		// fleet) holds workspaces that live in another: theirs to write.
		if _, err := os.Stat(e.lay.Workspace(w.ID).Dir()); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := ms.writeAll(ctx, w.ID); err != nil {
			e.warn("workspace %s: writing its manifests (tine doctor --rebuild reads them): %v", w.Name, err)
		}
	}
}

// writeAll writes every manifest of workspace ws, the workspace's last.
func (s *manifestStore) writeAll(ctx context.Context, ws string) error {
	t := &touched{runs: map[string]bool{}, versions: map[string]bool{}, groups: map[string]bool{}}
	err := s.Store.View(ctx, func(tx tine.Tx) error {
		runs, err := tx.Runs(tine.RunFilter{Workspace: ws})
		if err != nil {
			return err
		}
		for _, r := range runs {
			t.runs[r.ID] = true
		}
		vs, err := tx.Versions(ws)
		if err != nil {
			return err
		}
		for _, v := range vs {
			t.versions[v.ID] = true
		}
		gs, err := tx.Groups(ws)
		if err != nil {
			return err
		}
		for _, g := range gs {
			t.groups[g.ID] = true
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := s.writeManifests(ctx, ws, t); err != nil {
		return err
	}
	return s.writeManifests(ctx, ws, &touched{workspace: true})
}

// readManifest decodes the manifest at path into v.
func readManifest(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// isManifestName reports whether name, in a versions directory, is a
// version manifest (not a temporary file of one being written).
func isManifestName(name string) bool {
	return strings.HasSuffix(name, ".json") && !strings.HasPrefix(name, ".")
}
