package engine

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/atomicfile"
	"github.com/tinehq/tine/internal/procfs"
	"github.com/tinehq/tine/layer"
)

// SealReport says what sealing a run by copy cost, when it could not be
// sealed by rename in O(1): something held its view (Busy, and Holders
// names what was found), or its delta was too small to be worth the
// unmount.
type SealReport struct {
	// Whole is set when the run's whole delta was copied: the first seal
	// since the view was last sealed by rename, or a new chain of layers;
	// otherwise only what changed since the last seal was.
	Whole bool    `json:"whole"`
	Files int     `json:"files"` // entries copied
	Bytes int64   `json:"bytes"` // bytes of file data copied
	MS    float64 `json:"ms"`    // how long the seal took
	// Tracked is set when the daemon's change tracker named the
	// directories that changed, so the seal walked only those.
	Tracked bool `json:"tracked,omitempty"`
	// Presealed is set when the seal stacked on one the daemon made in
	// the background (a version of kind sealed), so it copied only what
	// changed since that one.
	Presealed bool `json:"presealed,omitempty"`
	// Unchanged is set when nothing changed since that last seal (the
	// change tracker vouched for it, or the walk found it): the version
	// has its layers, and no layer was made.
	Unchanged bool `json:"unchanged,omitempty"`
	Busy      bool `json:"busy"` // something held the run's view
	// Running is set when what held it was the run's own commands or
	// services (Holders is then empty: /proc is not searched).
	Running bool `json:"running,omitempty"`
	// Holders are processes found using the run's view (or the
	// workspace path), at most three.
	Holders []procfs.Holder `json:"holders,omitempty"`
}

// maxHolders bounds the processes a SealReport names.
const maxHolders = 3

// sealCopy seals run p by copy into the new layer dir: only what changed
// since its last seal when its backend can (layer.Incremental), its whole
// delta otherwise. It records what it cost in m.cost.
func (m *sealTx) sealCopy(ctx context.Context, be layer.Backend, base *tine.Version, dir string) ([]string, error) {
	e, p := m.e, m.p
	ctx, cancel := copyCtx(ctx)
	defer cancel()
	br := e.backendRun(p.Workspace, p.Run)
	inc, ok := be.(layer.Incremental)
	if !ok {
		return be.Seal(ctx, br, e.layerPaths(base), dir)
	}
	start := time.Now()
	prev := m.lastSealed(ctx, base)
	if m.restart {
		prev = nil // a new chain: the whole delta
	}
	var prevPaths []string
	if prev != nil {
		prevPaths = e.layerPaths(prev)
	}
	paths, cost, err := inc.SealOnto(ctx, br, e.layerPaths(base), prevPaths, dir)
	if err != nil {
		return nil, err
	}
	m.cost = &SealReport{Whole: cost.Whole, Files: cost.Files, Bytes: cost.Bytes, Tracked: cost.Pruned,
		Presealed: !cost.Whole && prev != nil && prev.Kind == tine.VersionSealed, Unchanged: cost.Unchanged,
		MS: float64(time.Since(start).Microseconds()) / 1000}
	return paths, nil
}

// chainLen returns how many layers incremental seals of p stacked on its
// base so far (0 when its next seal starts a new chain).
func (m *sealTx) chainLen(ctx context.Context) int {
	base, err := m.e.version(ctx, m.p.Run.Base)
	if err != nil {
		return 0
	}
	prev := m.lastSealed(ctx, base)
	if prev == nil {
		return 0
	}
	return len(prev.Layers) - len(base.Layers)
}

// sealedNote reads what noteSealed wrote for run p: the id of the
// version last sealed by copy from its view ("" when none), and whether
// something held the view then ("ID busy"), not merely a delta too small
// to be worth a rename.
func (e *Engine) sealedNote(p Ref) (id string, busy bool) {
	b, err := os.ReadFile(e.lay.Run(p.Workspace.ID, p.Run.ID).Sealed())
	if err != nil {
		return "", false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "", false
	}
	return f[0], len(f) > 1 && f[1] == "busy"
}

// heldLast reports whether p's last seal by copy over base was because
// something held its view (see sealedNote).
func (m *sealTx) heldLast(ctx context.Context, base *tine.Version) bool {
	_, busy := m.e.sealedNote(m.p)
	return busy && m.lastSealed(ctx, base) != nil
}

// lastSealed returns the last version sealed by copy from p's view over
// base, or nil when there is none (p was sealed by rename since, or that
// seal was never recorded).
func (m *sealTx) lastSealed(ctx context.Context, base *tine.Version) *tine.Version {
	e, p := m.e, m.p
	id, _ := e.sealedNote(p)
	if id == "" {
		return nil
	}
	v, err := e.version(ctx, id)
	if err != nil || v.Run != p.Run.ID || v.Parent != base.ID || len(v.Layers) <= len(base.Layers) ||
		!slices.Equal(v.Layers[:len(base.Layers)], base.Layers) {
		return nil
	}
	return v
}

// noteSealed names v as the last version sealed by copy from p's view,
// for the next seal to stack on, and says whether something held the view
// (m.busy: "ID busy"). It may be written before v is recorded:
// lastSealed only takes a version the store has. It returns what names
// the version named before again, for the seal's undo: a seal undone (a
// background seal giving way to a command) must leave the next one
// stacking where it would have, not copying the whole delta again.
func (m *sealTx) noteSealed(v *tine.Version) (undo func() error) {
	if m.cost == nil {
		return func() error { return nil }
	}
	e, p := m.e, m.p
	path := e.lay.Run(p.Workspace.ID, p.Run.ID).Sealed()
	before, err := os.ReadFile(path)
	had := err == nil
	note := v.ID
	if m.busy {
		note += " busy"
	}
	if err := atomicfile.Write(path, []byte(note), 0o644); err != nil {
		e.warn("%s: %v (its next fork copies its whole delta)", p.Run.Name, err)
	}
	return func() error {
		if !had {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			return nil
		}
		return atomicfile.Write(path, before, 0o644)
	}
}

// report returns what the seal by copy cost, naming the processes that
// held p's view if that is why it was not sealed by rename; nil when it
// was sealed by rename. When p's own commands held it, /proc is not
// searched: tine knows them, and the search costs a readlink per process.
func (m *sealTx) report() *SealReport {
	if m.cost == nil {
		return nil
	}
	if m.running {
		m.cost.Busy, m.cost.Running = true, true
		return m.cost
	}
	if m.busy {
		e, p := m.e, m.p
		dirs := []string{e.backendRun(p.Workspace, p.Run).View}
		if p.Run.Role == tine.RoleSource {
			dirs = append(dirs, p.Workspace.Path)
		}
		m.cost.Busy, m.cost.Holders = true, procfs.Holders("", dirs, maxHolders)
	}
	return m.cost
}

// copyStopKey is the context key of what stops a seal's copy.
type copyStopKey struct{}

// withCopyStop returns ctx whose seals' copies stop when stop ends (a
// Ctrl-C), while the rest of the work below ctx goes on.
func withCopyStop(ctx, stop context.Context) context.Context {
	return context.WithValue(ctx, copyStopKey{}, stop)
}

// copyCtx returns the context a seal's copy runs under: ctx, cancelled
// too when the stop of withCopyStop ends.
func copyCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	stop, ok := ctx.Value(copyStopKey{}).(context.Context)
	if !ok {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(stop, cancel)
	return ctx, func() { unhook(); cancel() }
}
