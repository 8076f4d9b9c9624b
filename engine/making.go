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
	"sync"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/atomicfile"
	"github.com/tinehq/tine/internal/mnt"
	"github.com/tinehq/tine/layer"
)

// A fork, checkpoint, rollback or promote makes its runs' directories and
// its layers before it records them in one store transaction. Each names
// what it is about to make in its making journal (layout's
// Workspace.Making), before making it, and removes the journal when it
// returns, done or undone. A journal found by the sweeper (which holds the
// workspace's lock, so its command is gone) is a command that was killed:
// what it names that the store has no record of is only a copy of files
// that are still where they were (a seal by rename has its own journal and
// is put back first), so it is removed, with one calm line, instead of
// going to the quarantine as unknown content does.

// makingJournal is a making journal.
type makingJournal struct {
	Op     string   `json:"op"`
	Runs   []string `json:"runs,omitempty"`
	Layers []string `json:"layers,omitempty"`
}

// making is the journal of one command, carried in its context.
type making struct {
	path string
	mu   sync.Mutex
	j    makingJournal
}

type makingKey struct{}

// startMaking opens the making journal of command op in workspace ws; the
// journal is written with the first directory noted. done removes it (and
// the journals' directory, when empty).
func (e *Engine) startMaking(ctx context.Context, ws, op string) (_ context.Context, done func()) {
	m := &making{path: e.lay.Workspace(ws).Making(op + "-" + tine.NewID("")), j: makingJournal{Op: op}}
	return context.WithValue(ctx, makingKey{}, m), func() {
		os.Remove(m.path)
		os.Remove(filepath.Dir(m.path)) // if empty: nothing of this command is left
	}
}

// noteRun names run directory id in ctx's making journal, if any.
func noteRun(ctx context.Context, id string) error {
	return noteMaking(ctx, func(j *makingJournal) { j.Runs = append(j.Runs, id) })
}

// noteLayer names layer id in ctx's making journal, if any.
func noteLayer(ctx context.Context, id string) error {
	return noteMaking(ctx, func(j *makingJournal) { j.Layers = append(j.Layers, id) })
}

// noteMaking adds to ctx's making journal with add and writes it.
func noteMaking(ctx context.Context, add func(*makingJournal)) error {
	m, ok := ctx.Value(makingKey{}).(*making)
	if !ok {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	add(&m.j)
	b, err := json.Marshal(m.j)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(m.path), 0o700)
	}
	if err == nil {
		err = atomicfile.Write(m.path, b, 0o600)
	}
	return err
}

// sweepMaking removes what the killed commands whose making journals are
// left in w made and never recorded (runs and layers are the store's
// records), saying so in one line per command, then the journals.
func (s *sweeper) sweepMaking(ctx context.Context, be layer.Backend, w *tine.Workspace, runs map[string]*tine.Run, layers map[string]bool) {
	e := s.e
	dir := e.lay.Workspace(w.ID).MakingDir()
	ents, _ := os.ReadDir(dir)
	for _, ent := range ents {
		p := filepath.Join(dir, ent.Name())
		var j makingJournal
		if b, err := os.ReadFile(p); err != nil || json.Unmarshal(b, &j) != nil {
			os.Remove(p) // torn as it was first written: it names nothing made
			continue
		}
		removed, err := s.unmake(ctx, be, w, j, runs, layers)
		if len(removed) > 0 {
			sort.Strings(removed)
			e.say("removed what an interrupted tine %s left in workspace %s: %s", j.Op, w.Name, strings.Join(removed, ", "))
		}
		if err != nil {
			e.warn("removing what an interrupted tine %s left in workspace %s: %v (the next tine command retries)", j.Op, w.Name, err)
			continue
		}
		os.Remove(p)
	}
	os.Remove(dir)
}

// unmake removes the runs and layers j names that are not recorded, and
// returns what it removed.
func (s *sweeper) unmake(ctx context.Context, be layer.Backend, w *tine.Workspace, j makingJournal, runs map[string]*tine.Run, layers map[string]bool) ([]string, error) {
	e := s.e
	var removed []string
	for _, id := range j.Runs {
		dir := e.lay.Run(w.ID, id).Dir()
		if runs[id] != nil || !exists(dir) {
			continue
		}
		br := layer.Run{ID: id, Dir: dir, View: filepath.Join(dir, "view")}
		if err := mnt.UnmountAll(br.View); err != nil {
			return removed, err
		}
		if err := be.Deactivate(ctx, br); err != nil {
			return removed, err
		}
		if err := removeTree(dir); err != nil {
			return removed, err
		}
		removed = append(removed, "run "+id)
	}
	for _, id := range j.Layers {
		dir := e.lay.Workspace(w.ID).Layer(id)
		if layers[id] || !exists(dir) {
			continue
		}
		if err := be.RemoveLayer(ctx, dir); err != nil {
			return removed, fmt.Errorf("layer %s: %w", id, err)
		}
		removed = append(removed, "layer "+id)
	}
	return removed, nil
}

// exists reports whether p exists.
func exists(p string) bool {
	_, err := os.Lstat(p)
	return !errors.Is(err, os.ErrNotExist)
}
