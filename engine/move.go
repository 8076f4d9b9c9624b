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
	"github.com/tinehq/tine/internal/atomicfile"
	"github.com/tinehq/tine/internal/mnt"
	"github.com/tinehq/tine/layer"
)

// moveJournal records a seal-by-rename between moving a run's delta into a
// new layer and recording that layer: the sweeper moves it back if the
// record never came, or finishes the remount if it did.
type moveJournal struct {
	Layer   string `json:"layer,omitempty"`
	Version string `json:"version"`
	Aside   string `json:"aside,omitempty"` // a rebase after compaction: where the old delta waits
}

// sealTx seals run p's files into a new layer and version: by renaming
// p's delta into the layer when nothing holds p's view (the journal, the
// move, the remount and their recovery are here), by copying otherwise
// (seal, in fork.go).
type sealTx struct {
	e *Engine
	p Ref
	// busy is set when something held p's view, so it could not be
	// sealed by rename; running when that was p's own commands or
	// services. cost says what a seal by copy copied.
	busy, running bool
	cost          *SealReport
	// restart makes a seal by copy start a new chain (copy the whole
	// delta) rather than stack on the last one: a background seal does
	// so before the chain is full, so that no fork has to.
	restart bool
}

func newSealTx(e *Engine, p Ref) *sealTx { return &sealTx{e: e, p: p} }

func (m *sealTx) moveJournalPath() string {
	e, p := m.e, m.p
	return e.lay.Run(p.Workspace.ID, p.Run.ID).SealJournal()
}

// A delta smaller than both of these is copied rather than renamed: the
// copy costs milliseconds, while unmounting an overlay syncs its whole
// filesystem, which costs as much as writing back every dirty page on it.
var (
	moveMinBytes int64 = 32 << 20
	moveMinFiles       = 2000
)

// deltaAtLeast reports whether dir holds at least minBytes of file data or
// minFiles entries, stopping as soon as it knows.
var deltaAtLeast = func(dir string, minBytes int64, minFiles int) bool {
	var bytes int64
	files := 0
	enough := errors.New("enough")
	err := fstree.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		files++
		if info, err := d.Info(); err == nil && info.Mode().IsRegular() {
			bytes += info.Size()
		}
		if files >= minFiles || bytes >= minBytes {
			return enough
		}
		return nil
	})
	return err == enough
}

// sealMove seals run p in O(1) when nothing holds its view: its delta is
// renamed into the new layer and p is left with an empty delta over the new
// version. It reports false (and changes nothing) when p is busy, its
// backend cannot, or the stack is too deep; the caller then copies. After
// the caller records the layer, the version and p.Run.Base = v, it calls
// finishMove; if the caller fails before that, the undo moves it all back.
func (m *sealTx) sealMove(ctx context.Context, be layer.Backend, kind tine.VersionKind, label string, u *undo) (*tine.Layer, *tine.Version, bool, error) {
	e, p := m.e, m.p
	mv, ok := be.(layer.Mover)
	if !ok {
		return nil, nil, false, nil
	}
	if e.rt.Busy(p) { // a supervisor holds the view mounted
		m.busy, m.running = true, true
		return nil, nil, false, nil
	}
	base, err := e.version(ctx, p.Run.Base)
	if err != nil || len(base.Layers)+1 > mv.MaxDepth() {
		return nil, nil, false, err
	}
	br := e.backendRun(p.Workspace, p.Run)
	// A run last sealed by copy because something held it most likely
	// still is held: the unmount is tried first, failing at once, rather
	// than after walking up to moveMinFiles entries of its delta (8-12 ms).
	wasBusy := m.heldLast(ctx, base)
	if wasBusy && e.detach(p.Workspace, p.Run, br) != nil {
		m.busy = true
		return nil, nil, false, nil // something holds the view: copy instead
	}
	if !deltaAtLeast(filepath.Join(br.Dir, "upper"), moveMinBytes, moveMinFiles) {
		if wasBusy { // unmounted above
			return nil, nil, false, m.remount(ctx, mv, br, base)
		}
		return nil, nil, false, nil // copying a small delta is cheaper than the unmount's sync
	}
	if !wasBusy && e.detach(p.Workspace, p.Run, br) != nil {
		m.busy = true
		return nil, nil, false, nil // something holds the view: copy instead
	}
	now := e.now().UTC()
	lay := &tine.Layer{ID: tine.NewID(tine.PrefixLayer), Workspace: p.Workspace.ID, CreatedAt: now}
	v := &tine.Version{ID: tine.NewID(tine.PrefixVersion), Workspace: p.Workspace.ID, Parent: base.ID, Run: p.Run.ID,
		Kind: kind, Label: label, Layers: append(append([]string{}, base.Layers...), lay.ID), CreatedAt: now}
	j, _ := json.Marshal(moveJournal{Layer: lay.ID, Version: v.ID})
	dir := e.lay.Workspace(p.Workspace.ID).Layer(lay.ID)
	err = atomicfile.Write(m.moveJournalPath(), j, 0o644, atomicfile.Durable) // on disk before the delta moves
	if err == nil {
		err = faultPointCtx(ctx) // journaled, the view unmounted, the delta not moved
	}
	if err == nil {
		err = mv.SealMove(ctx, br, dir)
	}
	if err != nil {
		os.Remove(m.moveJournalPath())
		return nil, nil, false, errors.Join(err, m.remount(ctx, mv, br, base))
	}
	u.add(func() error { return m.moveBack(ctx, mv, br, dir, base) })
	if err := faultPointCtx(ctx); err != nil { // the delta moved into the layer, not recorded
		return nil, nil, false, err
	}
	lay.Bytes, _ = fstree.DiskUsage(dir)
	return lay, v, true, nil
}

// finishMove mounts p's view over its new version once that is recorded.
// A failure is only a warning: the journal lets the next command finish.
func (m *sealTx) finishMove(ctx context.Context, be layer.Backend, v *tine.Version) {
	e, p := m.e, m.p
	br := e.backendRun(p.Workspace, p.Run)
	if err := m.remount(ctx, be.(layer.Mover), br, v); err != nil {
		e.warn("remounting %s after sealing it: %v (the next tine command retries)", p.Run.Name, err)
		return
	}
	if faultPointCtx(ctx) != nil { // remounted, its base not marked
		return
	}
	if err := markBase(br, v.ID); err != nil {
		e.warn("%s: %v", p.Run.Name, err)
		return
	}
	if faultPointCtx(ctx) != nil { // marked, the journal (and a set-aside delta) left
		return
	}
	m.dropAside()
	os.Remove(m.moveJournalPath())
}

// dropAside deletes the delta a rebase after compaction set aside, once
// the rebase is recorded (the compacted layer holds its files).
func (m *sealTx) dropAside() {
	b, err := os.ReadFile(m.moveJournalPath())
	var j moveJournal
	if err == nil && json.Unmarshal(b, &j) == nil && j.Aside != "" {
		os.RemoveAll(j.Aside)
	}
}

// rebaseCompacted handles a seal that compacted p's deep stack into v, one
// whole-tree layer which holds p's delta too. Left alone, p would stay on
// its deep stack and every later seal would compact it again. An idle p
// whose view unmounts is rebased instead: its delta is set aside
// (journaled), and once the caller records p.Run.Base = v, finishMove
// mounts p over v with an empty delta and drops the old one; if the caller
// fails first, the undo puts the delta back.
func (m *sealTx) rebaseCompacted(ctx context.Context, be layer.Backend, base, v *tine.Version, u *undo) bool {
	e, p := m.e, m.p
	mv, ok := be.(layer.Mover)
	if !ok || len(v.Layers) != 1 || len(base.Layers) < 2 || e.rt.Busy(p) {
		return false
	}
	br := e.backendRun(p.Workspace, p.Run)
	if e.detach(p.Workspace, p.Run, br) != nil {
		return false
	}
	aside := filepath.Join(br.Dir, "upper.compacted")
	if err := e.setAside(ctx, br, aside, v); err != nil {
		e.warn("rebasing %s after compaction: %v", p.Run.Name, err)
		os.Remove(m.moveJournalPath())
		if rerr := m.remount(ctx, mv, br, base); rerr != nil {
			e.warn("remounting %s: %v (the next tine command retries)", p.Run.Name, rerr)
		}
		return false
	}
	u.add(func() error { return m.moveBack(ctx, mv, br, aside, base) })
	_ = faultPointCtx(ctx) // set aside, not recorded (a hook's error cannot fail this step)
	return true
}

// setAside journals the rebase, then moves br's delta to aside and gives
// br an empty delta and work directory.
func (e *Engine) setAside(ctx context.Context, br layer.Run, aside string, v *tine.Version) error {
	j, _ := json.Marshal(moveJournal{Version: v.ID, Aside: aside})
	if err := atomicfile.Write(filepath.Join(br.Dir, "seal.json"), j, 0o644, atomicfile.Durable); err != nil { // on disk before the delta moves
		return err
	}
	if err := faultPointCtx(ctx); err != nil { // journaled, nothing moved
		return err
	}
	up, work := filepath.Join(br.Dir, "upper"), filepath.Join(br.Dir, "work")
	if err := os.Rename(up, aside); err != nil {
		return err
	}
	if err := faultPointCtx(ctx); err != nil { // the delta aside, no upper directory
		return err
	}
	if err := os.Mkdir(up, 0o755); err != nil {
		return err
	}
	if err := fstree.CopyAttrs(aside, up); err != nil {
		return err
	}
	if err := os.RemoveAll(work); err != nil {
		return err
	}
	return os.Mkdir(work, 0o755)
}

// remount mounts p's view over version v with its current delta, and binds
// the source's view onto the workspace path.
func (m *sealTx) remount(ctx context.Context, mv layer.Mover, br layer.Run, v *tine.Version) error {
	e, p := m.e, m.p
	if err := mv.Restore(ctx, br, e.layerPaths(v)); err != nil {
		return err
	}
	if p.Run.Role == tine.RoleSource {
		return bindSource(p.Workspace, br)
	}
	return nil
}

// moveBack undoes a seal-by-rename whose records were never written: the
// new layer becomes the run's delta again.
func (m *sealTx) moveBack(ctx context.Context, mv layer.Mover, br layer.Run, dir string, base *tine.Version) error {
	e, p := m.e, m.p
	if err := e.detach(p.Workspace, p.Run, br); err != nil {
		return err
	}
	up := filepath.Join(br.Dir, "upper")
	if ents, _ := os.ReadDir(up); len(ents) > 0 {
		return fmt.Errorf("cannot move the delta of %s back from %s: its new delta is not empty", p.Run.Name, dir)
	}
	if err := os.RemoveAll(up); err != nil {
		return err
	}
	if err := os.Rename(dir, up); err != nil {
		return err
	}
	os.Remove(m.moveJournalPath())
	return m.remount(ctx, mv, br, base)
}

// recoverMove handles the journal of a seal-by-rename a crash interrupted.
func (m *sealTx) recoverMove(ctx context.Context, be layer.Backend) error {
	e, p := m.e, m.p
	w, r := p.Workspace, p.Run
	b, err := os.ReadFile(m.moveJournalPath())
	if err != nil {
		return nil
	}
	var j moveJournal
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("unreadable seal journal: %w", err)
	}
	br := e.backendRun(w, r)
	if _, err := e.version(ctx, j.Version); err == nil && r.Base == j.Version {
		// Recorded: the run is based on the new version with an empty delta.
		if err := markBase(br, j.Version); err != nil {
			return err
		}
		if j.Aside != "" {
			os.RemoveAll(j.Aside)
		}
		return os.Remove(m.moveJournalPath())
	}
	mv, ok := be.(layer.Mover)
	dir := e.lay.Workspace(w.ID).Layer(j.Layer)
	if j.Aside != "" {
		dir = j.Aside
	}
	if _, err := os.Stat(dir); !ok || err != nil {
		return os.Remove(m.moveJournalPath())
	}
	base, err := e.version(ctx, r.Base)
	if err != nil {
		return err
	}
	mnt.UnmountAll(br.View)
	return m.moveBack(ctx, mv, br, dir, base)
}
