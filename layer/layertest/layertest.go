package layertest

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/tinehq/tine/layer"
)

// Option tunes Run.
type Option func(*config)

type config struct {
	root  func(t *testing.T) string
	skips map[string]string // case name to reason
}

// WithRoot makes every case keep its layers, runs and source directories
// under a fresh directory inside root(t), called once per case: a
// directory on the filesystem the backend needs (a loop-mounted btrfs, an
// XFS with reflink). The default is t.TempDir().
func WithRoot(root func(t *testing.T) string) Option {
	return func(c *config) { c.root = root }
}

// WithSkip skips the named cases (see Cases) with reason, for a backend
// that documents it cannot pass them on this platform.
func WithSkip(reason string, cases ...string) Option {
	return func(c *config) {
		for _, name := range cases {
			c.skips[name] = reason
		}
	}
}

// Cases returns the names of the suite's cases, in the order Run runs them.
func Cases() []string {
	names := make([]string, len(cases))
	for i, c := range cases {
		names[i] = c.name
	}
	return names
}

// Run runs the conformance suite against backends made by newBackend, one
// per case. Each case is a subtest with fresh directories; the suite plays
// the engine (it chooses every layer and run path, and calls Import,
// Activate, Seal, Changes, Read, Deactivate, RemoveLayer and, when the
// backend has it, Restore) and checks the results by reading the runs' views
// with plain os calls. No case needs root; a backend that does skips in its
// own test.
func Run(t *testing.T, newBackend func(t *testing.T) layer.Backend, opts ...Option) {
	cfg := config{root: func(t *testing.T) string { return t.TempDir() }, skips: map[string]string{}}
	for _, o := range opts {
		o(&cfg)
	}
	for name := range cfg.skips {
		if !slices.Contains(Cases(), name) {
			t.Errorf("layertest: WithSkip names %q, which is not a case", name)
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if reason, ok := cfg.skips[c.name]; ok {
				t.Skip(reason)
			}
			c.fn(newHarness(t, newBackend(t), cfg.root(t)))
		})
	}
}

// harness plays the engine for one case: it hands out layer and run paths
// under root, remembers them, and tears everything down at the end.
type harness struct {
	t      *testing.T
	ctx    context.Context
	b      layer.Backend
	root   string
	n      int
	runs   []layer.Run
	layers []string
	reads  []*release // Read results not released yet
}

// release is the release function Read returned, and whether it ran.
type release struct {
	fn   func() error
	done bool
}

// newHarness makes a harness keeping its directories in a fresh directory
// under root.
func newHarness(t *testing.T, b layer.Backend, root string) *harness {
	t.Helper()
	dir, err := os.MkdirTemp(root, "case-")
	if err != nil {
		t.Fatalf("layertest: %v", err)
	}
	for _, sub := range []string{"layers", "runs", "src", "scratch"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatalf("layertest: %v", err)
		}
	}
	h := &harness{t: t, ctx: t.Context(), b: b, root: dir}
	t.Cleanup(h.cleanup)
	return h
}

// cleanup deactivates every run and removes every layer, as the engine's
// discard and sweeper would, then removes the case's directory.
func (h *harness) cleanup() {
	ctx := context.Background()
	for _, rel := range h.reads {
		if !rel.done {
			if err := rel.fn(); err != nil {
				h.t.Errorf("cleanup: release of Read: %v", err)
			}
		}
	}
	for _, r := range slices.Backward(h.runs) {
		if err := h.b.Deactivate(ctx, r); err != nil {
			h.t.Errorf("cleanup: Deactivate %s: %v", r.ID, err)
		}
	}
	for _, l := range slices.Backward(h.layers) {
		if err := h.b.RemoveLayer(ctx, l); err != nil {
			h.t.Errorf("cleanup: RemoveLayer %s: %v", l, err)
		}
	}
	if err := os.RemoveAll(h.root); err != nil {
		h.t.Errorf("cleanup: %v", err)
	}
}

// next returns a number not used before in this case.
func (h *harness) next() string {
	h.n++
	return strconv.Itoa(h.n)
}

// layerPath returns a path for a new layer, which does not exist.
func (h *harness) layerPath() string {
	p := filepath.Join(h.root, "layers", h.next())
	h.layers = append(h.layers, p)
	return p
}

// newRun returns a run whose Dir exists and whose View does not.
func (h *harness) newRun() layer.Run {
	h.t.Helper()
	id := h.next()
	base := filepath.Join(h.root, "runs", id)
	r := layer.Run{ID: "run" + id, Dir: filepath.Join(base, "dir"), View: filepath.Join(base, "view")}
	if err := os.MkdirAll(r.Dir, 0o700); err != nil {
		h.t.Fatalf("layertest: %v", err)
	}
	h.runs = append(h.runs, r)
	return r
}

// source writes tr into a fresh source directory and returns it.
func (h *harness) source(tr tree) string {
	h.t.Helper()
	dir := filepath.Join(h.root, "src", h.next())
	if err := os.Mkdir(dir, 0o755); err != nil {
		h.t.Fatalf("layertest: %v", err)
	}
	tr.create(h.t, dir)
	return dir
}

// importDir imports the directory dir into a new layer and returns the
// version made of it.
func (h *harness) importDir(dir string, move bool) []string {
	h.t.Helper()
	l := h.layerPath()
	if err := h.b.Import(h.ctx, dir, l, move); err != nil {
		h.t.Fatalf("Import(%s, move=%v): %v", dir, move, err)
	}
	h.mustBeDir("Import", l)
	return []string{l}
}

// importTree imports a copy of tr and returns the version made of it.
func (h *harness) importTree(tr tree) []string {
	h.t.Helper()
	return h.importDir(h.source(tr), false)
}

// activate gives a new run a view of version and returns it.
func (h *harness) activate(version []string) layer.Run {
	h.t.Helper()
	r := h.newRun()
	h.activateRun(r, version)
	return r
}

// activateRun gives r a view of version.
func (h *harness) activateRun(r layer.Run, version []string) {
	h.t.Helper()
	if err := h.b.Activate(h.ctx, r, slices.Clone(version)); err != nil {
		h.t.Fatalf("Activate(%s, %v): %v", r.ID, version, err)
	}
	h.mustBeDir("Activate", r.View)
}

// seal seals r, activated from base, into a new layer and returns the
// resulting version.
func (h *harness) seal(r layer.Run, base []string) []string {
	h.t.Helper()
	l := h.layerPath()
	arg := slices.Clone(base)
	v, err := h.b.Seal(h.ctx, r, arg, l)
	if err != nil {
		h.t.Fatalf("Seal(%s, %v): %v", r.ID, base, err)
	}
	if !slices.Equal(arg, base) {
		h.t.Errorf("Seal(%s) changed its base argument to %v", r.ID, arg)
	}
	if len(v) == 0 || v[len(v)-1] != l {
		h.t.Fatalf("Seal(%s, %v, %s) = %v: the version must end with the new layer", r.ID, base, l, v)
	}
	h.mustBeDir("Seal", l)
	return v
}

// fork seals r (activated from base) and activates a new run from the
// resulting version, which it returns with the run.
func (h *harness) fork(r layer.Run, base []string) (layer.Run, []string) {
	h.t.Helper()
	v := h.seal(r, base)
	return h.activate(v), v
}

// read makes version readable with Read and returns the directory and a
// function that releases it (and fails the case on an error).
func (h *harness) read(version []string) (string, func()) {
	h.t.Helper()
	scratch := filepath.Join(h.root, "scratch", h.next())
	dir, fn, err := h.b.Read(h.ctx, slices.Clone(version), scratch)
	if err != nil {
		h.t.Fatalf("Read(%v): %v", version, err)
	}
	rel := &release{fn: fn}
	h.reads = append(h.reads, rel)
	return dir, func() {
		h.t.Helper()
		rel.done = true
		if err := fn(); err != nil {
			h.t.Errorf("release of Read(%v): %v", version, err)
		}
	}
}

// changes returns Changes(r, base).
func (h *harness) changes(r layer.Run, base []string) []layer.Change {
	h.t.Helper()
	c, err := h.b.Changes(h.ctx, r, slices.Clone(base))
	if err != nil {
		h.t.Fatalf("Changes(%s, %v): %v", r.ID, base, err)
	}
	return c
}

// deactivate deactivates r.
func (h *harness) deactivate(r layer.Run) {
	h.t.Helper()
	if err := h.b.Deactivate(h.ctx, r); err != nil {
		h.t.Fatalf("Deactivate(%s): %v", r.ID, err)
	}
}

// check fails the case unless r's view holds exactly want.
func (h *harness) check(what string, r layer.Run, want tree) {
	h.t.Helper()
	checkTree(h.t, what, r.View, want)
}

// checkVersion activates a fresh run from version, checks that it holds
// exactly want, and deactivates it.
func (h *harness) checkVersion(what string, version []string, want tree) {
	h.t.Helper()
	r := h.activate(version)
	checkTree(h.t, what, r.View, want)
	h.deactivate(r)
}

// do applies ops to r's view.
func (h *harness) do(r layer.Run, ops ...op) {
	h.t.Helper()
	apply(h.t, r.View, ops...)
}

// checkChanges fails the case unless Changes(r, base) is exactly want, in
// order. Sizes are compared for regular files that were added, modified or
// deleted; other sizes are the backend's to choose.
func (h *harness) checkChanges(what string, r layer.Run, base []string, want []layer.Change) {
	h.t.Helper()
	got := h.changes(r, base)
	if diff := cmp.Diff(checkedSizes(want), checkedSizes(got), cmpopts.EquateEmpty()); diff != "" {
		h.t.Errorf("%s: Changes differ (-want +got):\n%s", what, diff)
	}
}

// checkedSizes returns cs with the sizes the suite does not check zeroed:
// all but those of regular files added, modified or deleted.
func checkedSizes(cs []layer.Change) []layer.Change {
	out := slices.Clone(cs)
	for i, c := range out {
		if c.Type != fileType || c.Kind == layer.TypeChanged {
			out[i].Size, out[i].OldSize = 0, 0
		}
	}
	return out
}

// mustBeDir fails the case unless p is a directory, as after the call op.
func (h *harness) mustBeDir(op, p string) {
	h.t.Helper()
	fi, err := os.Stat(p)
	if err != nil || !fi.IsDir() {
		h.t.Fatalf("after %s, %s must be a directory: %v", op, p, errOr(err, "not a directory"))
	}
}

// mustNotExist fails the case unless nothing is at p.
func (h *harness) mustNotExist(what, p string) {
	h.t.Helper()
	if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
		h.t.Errorf("%s: %s must not exist (lstat: %v)", what, p, err)
	}
}

func errOr(err error, msg string) error {
	if err != nil {
		return err
	}
	return errors.New(msg)
}

// Change constructors for expected lists.

func added(p, typ string, size int64) layer.Change {
	return layer.Change{Path: p, Kind: layer.Added, Type: typ, Size: size}
}

func modified(p, typ string, size, old int64) layer.Change {
	return layer.Change{Path: p, Kind: layer.Modified, Type: typ, Size: size, OldSize: old}
}

func deleted(p, typ string, old int64) layer.Change {
	return layer.Change{Path: p, Kind: layer.Deleted, Type: typ, OldSize: old}
}

func typeChanged(p, typ string) layer.Change {
	return layer.Change{Path: p, Kind: layer.TypeChanged, Type: typ}
}
