package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/loopfs"
	"github.com/tinehq/tine/internal/mnt"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/layer/overlay"
	"github.com/tinehq/tine/layout"
)

// backends returns the backends this machine can test: copy always,
// overlay as root.
func backends(t *testing.T) []string {
	out := []string{"copy"}
	if os.Geteuid() == 0 && overlay.Probe(t.TempDir()) == nil {
		out = append(out, "overlay")
	} else {
		t.Log("overlay cases skipped: they need root and overlay mounts")
	}
	return out
}

type fixture struct {
	t    *testing.T
	ctx  context.Context
	e    *Engine
	home string
	path string
	ref  Ref
}

// newFixture opens an engine on a fresh state directory and inits a small
// workspace with the given backend.
func newFixture(t *testing.T, backend string) *fixture {
	t.Helper()
	return newFixtureAt(t, backend, t.TempDir(), filepath.Join(t.TempDir(), "ws"))
}

// newFixtureAt is newFixture with the state directory and workspace path given.
func newFixtureAt(t *testing.T, backend, home, path string) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: context.Background(), home: home, path: path}
	writeFiles(t, f.path, map[string]string{"a.txt": "alpha\n", "dir/b.txt": "beta\n", "dir/sub/c.txt": "gamma\n"})
	f.open()
	ref, err := f.e.Init(f.ctx, InitOptions{Path: f.path, Backend: backend})
	if err != nil {
		t.Fatalf("Init: %v", err)
	}
	f.ref = ref
	t.Cleanup(func() {
		if f.e != nil {
			f.e.Release(f.ctx, f.path, true)
			f.e.Close()
		}
		mnt.UnmountAll(f.path)
	})
	return f
}

func (f *fixture) open(opts ...Option) {
	f.t.Helper()
	e, err := Open(f.ctx, f.home, testOptions(opts...)...)
	if err != nil {
		f.t.Fatalf("Open: %v", err)
	}
	f.e = e
}

// reopen closes and opens the engine again, as the next command would.
func (f *fixture) reopen() {
	f.t.Helper()
	f.e.Close()
	f.open()
}

func (f *fixture) run(ref string) Ref {
	f.t.Helper()
	r, err := f.e.FindRun(f.ctx, ref)
	if err != nil {
		f.t.Fatalf("FindRun(%s): %v", ref, err)
	}
	return r
}

func (f *fixture) fork(n int) *ForkResult {
	f.t.Helper()
	res, err := f.e.Fork(f.ctx, f.ref.Run.ID, ForkOptions{Copies: n})
	if err != nil {
		f.t.Fatalf("Fork: %v", err)
	}
	return res
}

func (f *fixture) view(r *tine.Run) string { return f.e.Path(f.ref.Workspace, r) }

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return string(b)
}

func names(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func TestEngine_ForkIsolatesAndDiscards(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be, func(t *testing.T) {
			f := newFixture(t, be)
			res := f.fork(2)
			one, two := res.Forks[0], res.Forks[1]
			writeFiles(t, f.view(one), map[string]string{"a.txt": "one\n"})
			if err := os.Remove(filepath.Join(f.view(two), "dir/b.txt")); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, filepath.Join(f.path, "a.txt")); got != "alpha\n" {
				t.Errorf("source a.txt = %q after a fork wrote it", got)
			}
			if got := readFile(t, filepath.Join(f.view(two), "a.txt")); got != "alpha\n" {
				t.Errorf("sibling a.txt = %q", got)
			}
			ch, err := f.e.Changes(f.ctx, f.run(one.ID))
			if err != nil || len(ch) != 1 || ch[0].Path != "a.txt" || ch[0].Kind != layer.Modified {
				t.Errorf("Changes(one) = %+v, %v; want a.txt modified", ch, err)
			}
			if _, err := f.e.Discard(f.ctx, one.ID, false); !errors.Is(err, tine.ErrUnmerged) {
				t.Fatalf("Discard of unmerged run: %v, want ErrUnmerged", err)
			}
			if got := readFile(t, filepath.Join(f.view(one), "a.txt")); got != "one\n" {
				t.Errorf("refused discard touched the run: %q", got)
			}
			runs, err := f.e.Discard(f.ctx, res.Group.ID, true)
			if err != nil || len(runs) != 2 {
				t.Fatalf("Discard(group, force) = %d runs, %v", len(runs), err)
			}
			if n := names(filepath.Join(f.e.lay.Workspace(f.ref.Workspace.ID).Dir(), "runs")); len(n) != 1 {
				t.Errorf("run directories after discard: %v, want only the source's", n)
			}
			if r := f.run(one.ID); r.Run.State != tine.StateDiscarded {
				t.Errorf("state %s, want discarded (history kept)", r.Run.State)
			}
		})
	}
}

func TestEngine_DiscardCleanForkNeedsNoForce(t *testing.T) {
	f := newFixture(t, "copy")
	res := f.fork(1)
	if _, err := f.e.Discard(f.ctx, res.Forks[0].Name, false); err != nil {
		t.Fatalf("Discard of an unchanged fork: %v", err)
	}
	if _, err := f.e.Discard(f.ctx, res.Forks[0].Name, false); !errors.Is(err, tine.ErrState) {
		t.Errorf("second Discard: %v, want ErrState", err)
	}
	if _, err := f.e.Discard(f.ctx, "source", true); !errors.Is(err, tine.ErrState) {
		t.Errorf("Discard of the source: %v, want ErrState", err)
	}
}

// failingBackend fails Activate after a number of calls.
type failingBackend struct {
	layer.Backend
	okActivations int
}

func (b *failingBackend) Activate(ctx context.Context, r layer.Run, layers []string) error {
	if b.okActivations == 0 {
		return fmt.Errorf("injected failure")
	}
	b.okActivations--
	return b.Backend.Activate(ctx, r, layers)
}

func TestEngine_FailedForkLeavesNothing(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be, func(t *testing.T) {
			f := newFixture(t, be)
			wsDir := f.e.lay.Workspace(f.ref.Workspace.ID).Dir()
			layersBefore := names(filepath.Join(wsDir, "layers"))
			real := f.e.backend
			f.e.backend = func(name string) (layer.Backend, error) {
				b, err := real(name)
				return &failingBackend{Backend: b, okActivations: 2}, err
			}
			_, err := f.e.Fork(f.ctx, "source", ForkOptions{Copies: 3})
			if err == nil || !strings.Contains(err.Error(), "injected failure") {
				t.Fatalf("Fork = %v, want the injected failure", err)
			}
			f.e.backend = real
			st, err := f.e.Records(f.ctx, f.ref.Workspace.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(st[0].Runs) != 1 || len(st[0].Versions) != 1 || len(st[0].Groups) != 0 {
				t.Errorf("records after a failed fork: %d runs, %d versions, %d groups", len(st[0].Runs), len(st[0].Versions), len(st[0].Groups))
			}
			if got := names(filepath.Join(wsDir, "runs")); len(got) != 1 {
				t.Errorf("run directories: %v", got)
			}
			if got := names(filepath.Join(wsDir, "layers")); len(got) != len(layersBefore) {
				t.Errorf("layers: %v, before %v", got, layersBefore)
			}
			assertNoMountsUnder(t, wsDir+"/runs", 1)
		})
	}
}

// assertNoMountsUnder checks how many mounts are below dir (the source's view
// counts for a stacking backend).
func assertNoMountsUnder(t *testing.T, dir string, max int) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	n := strings.Count(string(b), " "+dir+"/")
	if n > max {
		t.Errorf("%d mounts under %s, want at most %d", n, dir, max)
	}
}

func TestEngine_CheckpointAndRollback(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be, func(t *testing.T) {
			f := newFixture(t, be)
			fork := f.fork(1).Forks[0]
			writeFiles(t, f.view(fork), map[string]string{"a.txt": "checkpointed\n"})
			cp, err := f.e.Checkpoint(f.ctx, fork.ID, "cp")
			if err != nil {
				t.Fatal(err)
			}
			writeFiles(t, f.view(fork), map[string]string{"a.txt": "later\n", "new.txt": "new\n"})
			res, err := f.e.Rollback(f.ctx, fork.ID, "cp")
			if err != nil {
				t.Fatal(err)
			}
			if res.To.ID != cp.ID {
				t.Errorf("rolled back to %s, want %s", res.To.ID, cp.ID)
			}
			if got := readFile(t, filepath.Join(f.view(fork), "a.txt")); got != "checkpointed\n" {
				t.Errorf("a.txt after rollback = %q", got)
			}
			if _, err := os.Stat(filepath.Join(f.view(fork), "new.txt")); !os.IsNotExist(err) {
				t.Errorf("new.txt survived the rollback: %v", err)
			}
			// Nothing is lost: roll forward to the saved version.
			if _, err := f.e.Rollback(f.ctx, fork.ID, res.Saved.ID); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, filepath.Join(f.view(fork), "new.txt")); got != "new\n" {
				t.Errorf("new.txt after rolling forward = %q", got)
			}
			if _, err := f.e.Rollback(f.ctx, fork.ID, "nope"); !errors.Is(err, tine.ErrNotFound) {
				t.Errorf("rollback to an unknown version: %v", err)
			}
		})
	}
}

func TestEngine_SourceRollback(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be, func(t *testing.T) {
			f := newFixture(t, be)
			writeFiles(t, f.path, map[string]string{"a.txt": "changed\n"})
			if _, err := f.e.Rollback(f.ctx, "source", f.ref.Run.Origin); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, filepath.Join(f.path, "a.txt")); got != "alpha\n" {
				t.Errorf("source a.txt after rollback = %q", got)
			}
		})
	}
}

func TestEngine_InterruptedRollbackIsFinished(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be, func(t *testing.T) {
			f := newFixture(t, be)
			fork := f.fork(1).Forks[0]
			writeFiles(t, f.view(fork), map[string]string{"a.txt": "later\n"})
			// The store says the run went back to its fork point; the crash
			// came before the remount.
			err := f.e.store.Update(f.ctx, func(tx tine.Tx) error {
				r, err := tx.Run(fork.ID)
				if err != nil {
					return err
				}
				r.Base = fork.Origin
				if r.Base == readBase(f.e.backendRun(f.ref.Workspace, r)) {
					r.Base = f.ref.Run.Origin
				}
				return tx.UpdateRun(r)
			})
			if err != nil {
				t.Fatal(err)
			}
			f.reopen()
			if got := readFile(t, filepath.Join(f.view(fork), "a.txt")); got != "alpha\n" {
				t.Errorf("a.txt after recovery = %q, want the fork point's", got)
			}
			// What the view held was saved as a version before it was replaced.
			st, _ := f.e.Records(f.ctx, f.ref.Workspace.ID)
			saved := 0
			for _, v := range st[0].Versions {
				if v.Kind == tine.VersionSaved && v.Run == fork.ID {
					saved++
				}
			}
			if saved != 1 {
				t.Errorf("%d saved versions, want 1", saved)
			}
		})
	}
}

func TestEngine_InterruptedInitIsUndone(t *testing.T) {
	home, path := t.TempDir(), t.TempDir()
	ctx := context.Background()
	// What a crash right after moving the files into the base layer leaves.
	wsDir := filepath.Join(home, "workspaces", "wcrashed1")
	lay := filepath.Join(wsDir, "layers", "lcrashed1")
	writeFiles(t, lay, map[string]string{"keep.txt": "precious\n", "d/e.txt": "e\n"})
	writeFiles(t, path, map[string]string{markerName: "marker"})
	j := fmt.Sprintf(`{"path":%q,"layer":%q}`, path, lay)
	writeFiles(t, wsDir, map[string]string{"init.json": j})
	e, err := Open(ctx, home, testOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got := readFile(t, filepath.Join(path, "keep.txt")); got != "precious\n" {
		t.Errorf("keep.txt = %q", got)
	}
	if _, err := os.Stat(filepath.Join(path, markerName)); !os.IsNotExist(err) {
		t.Errorf("marker left behind: %v", err)
	}
	if _, err := os.Stat(wsDir); !os.IsNotExist(err) {
		t.Errorf("orphan state directory left: %v", err)
	}
}

func TestEngine_RemountsAfterReboot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("requires root: overlay mounts")
	}
	f := newFixture(t, "overlay")
	fork := f.fork(1).Forks[0]
	writeFiles(t, f.view(fork), map[string]string{"a.txt": "fork\n"})
	writeFiles(t, f.path, map[string]string{"a.txt": "source\n"})
	// A reboot: every mount is gone.
	for _, p := range []string{f.path, f.view(fork), f.e.backendRun(f.ref.Workspace, f.ref.Run).View} {
		if err := mnt.UnmountAll(p); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(f.path, markerName)); err != nil {
		t.Errorf("unmounted workspace has no marker: %v", err)
	}
	f.reopen()
	if got := readFile(t, filepath.Join(f.path, "a.txt")); got != "source\n" {
		t.Errorf("source a.txt after remount = %q", got)
	}
	if got := readFile(t, filepath.Join(f.view(fork), "a.txt")); got != "fork\n" {
		t.Errorf("fork a.txt after remount = %q", got)
	}
}

func TestEngine_Release(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be, func(t *testing.T) {
			f := newFixture(t, be)
			writeFiles(t, f.path, map[string]string{"a.txt": "released\n"})
			if err := os.Remove(filepath.Join(f.path, "dir/sub/c.txt")); err != nil {
				t.Fatal(err)
			}
			fork := f.fork(1).Forks[0]
			writeFiles(t, f.view(fork), map[string]string{"fork.txt": "x"})
			if _, err := f.e.Release(f.ctx, f.path, false); !errors.Is(err, tine.ErrUnmerged) {
				t.Fatalf("Release with an unmerged fork: %v", err)
			}
			if _, err := f.e.Release(f.ctx, f.path, true); err != nil {
				t.Fatal(err)
			}
			if ok, _ := mnt.IsMountpoint(f.path); ok {
				t.Error("workspace still mounted")
			}
			if got := readFile(t, filepath.Join(f.path, "a.txt")); got != "released\n" {
				t.Errorf("a.txt = %q", got)
			}
			if _, err := os.Stat(filepath.Join(f.path, "dir/sub/c.txt")); !os.IsNotExist(err) {
				t.Errorf("deleted file is back: %v", err)
			}
			if _, err := os.Stat(filepath.Join(f.path, markerName)); !os.IsNotExist(err) {
				t.Errorf("marker left: %v", err)
			}
			if n := names(filepath.Join(f.home, "workspaces")); len(n) != 0 {
				t.Errorf("state left: %v", n)
			}
		})
	}
}

func TestEngine_InitErrors(t *testing.T) {
	f := newFixture(t, "copy")
	file := filepath.Join(t.TempDir(), "file")
	writeFiles(t, filepath.Dir(file), map[string]string{"file": "x"})
	other := t.TempDir()
	cases := []struct {
		name string
		o    InitOptions
		want error
	}{
		{"NotADirectory", InitOptions{Path: file, Backend: "copy"}, tine.ErrInvalid},
		{"Missing", InitOptions{Path: file + "-missing", Backend: "copy"}, tine.ErrInvalid},
		{"Nested", InitOptions{Path: filepath.Join(f.path, "dir"), Backend: "copy"}, tine.ErrExists},
		{"Again", InitOptions{Path: f.path, Backend: "copy"}, tine.ErrExists},
		{"Contains", InitOptions{Path: filepath.Dir(f.path), Backend: "copy", Name: "outer"}, tine.ErrExists},
		{"NameTaken", InitOptions{Path: other, Backend: "copy", Name: f.ref.Workspace.Name}, tine.ErrExists},
		{"BadName", InitOptions{Path: other, Backend: "copy", Name: "a/b"}, tine.ErrInvalid},
		{"StateDir", InitOptions{Path: f.home, Backend: "copy"}, tine.ErrInvalid},
		{"UnknownBackend", InitOptions{Path: other, Backend: "zfs"}, tine.ErrInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.e.Init(f.ctx, c.o)
			if !errors.Is(err, c.want) {
				t.Fatalf("Init = %v, want %v", err, c.want)
			}
		})
	}
	st, _ := f.e.Records(f.ctx, "")
	if len(st) != 1 {
		t.Errorf("%d workspaces after failed inits, want 1", len(st))
	}
}

func TestEngine_ForkNames(t *testing.T) {
	f := newFixture(t, "copy")
	res, err := f.e.Fork(f.ctx, "source", ForkOptions{Copies: 2, Approaches: []string{"x"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Forks[0].Name != "source-1" || res.Forks[1].Name != "source-2" || res.Forks[0].Approach != "x" || res.Forks[1].Approach != "" {
		t.Errorf("forks %+v %+v", res.Forks[0], res.Forks[1])
	}
	res, err = f.e.Fork(f.ctx, "source", ForkOptions{Copies: 1, Name: "exact"})
	if err != nil || res.Forks[0].Name != "exact" {
		t.Fatalf("named fork: %v", err)
	}
	if _, err := f.e.Fork(f.ctx, "source", ForkOptions{Copies: 1, Name: "exact"}); !errors.Is(err, tine.ErrExists) {
		t.Errorf("duplicate name: %v", err)
	}
	if _, err := f.e.Fork(f.ctx, "source", ForkOptions{Copies: 1, Approaches: []string{"a", "b"}}); !errors.Is(err, tine.ErrInvalid) {
		t.Errorf("too many approaches: %v", err)
	}
	res, err = f.e.Fork(f.ctx, "source", ForkOptions{Copies: 1})
	if err != nil || res.Forks[0].Name != "source-3" {
		t.Errorf("next default name: %+v, %v", res, err)
	}
	if got := f.run(f.ref.Workspace.Name + "/exact"); got.Run.Name != "exact" {
		t.Errorf("WORKSPACE/NAME lookup: %+v", got.Run)
	}
}

func TestEngine_ConcurrentForks(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be, func(t *testing.T) {
			f := newFixture(t, be)
			const n = 6
			errs := make(chan error, n)
			for i := 0; i < n; i++ {
				go func() {
					e, err := Open(f.ctx, f.home, testOptions()...) // as another tine process would
					if err != nil {
						errs <- err
						return
					}
					defer e.Close()
					_, err = e.Fork(f.ctx, f.ref.Run.ID, ForkOptions{Copies: 2})
					errs <- err
				}()
			}
			for i := 0; i < n; i++ {
				if err := <-errs; err != nil {
					t.Errorf("concurrent Fork: %v", err)
				}
			}
			st, err := f.e.Records(f.ctx, f.ref.Workspace.ID)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			for _, r := range st[0].Runs {
				if seen[r.Name] {
					t.Errorf("name %s given twice", r.Name)
				}
				seen[r.Name] = true
			}
			if len(st[0].Runs) != 1+2*n || len(st[0].Groups) != n {
				t.Errorf("%d runs, %d groups; want %d, %d", len(st[0].Runs), len(st[0].Groups), 1+2*n, n)
			}
		})
	}
}

// TestEngine_CloningBackends runs the whole lifecycle on the backends that
// need their own filesystem: reflink on XFS, btrfs on btrfs (loop mounts).
func TestEngine_CloningBackends(t *testing.T) {
	for _, c := range []struct{ backend, fstype string }{{"reflink", "xfs"}, {"btrfs", "btrfs"}} {
		t.Run(c.backend, func(t *testing.T) {
			root := loopfs.Mount(t, c.fstype)
			f := newFixtureAt(t, c.backend, filepath.Join(root, "state"), filepath.Join(root, "ws"))
			if f.ref.Workspace.Backend != c.backend {
				t.Fatalf("backend %s", f.ref.Workspace.Backend)
			}
			fork := f.fork(2).Forks[0]
			writeFiles(t, f.view(fork), map[string]string{"a.txt": "fork\n"})
			if got := readFile(t, filepath.Join(f.path, "a.txt")); got != "alpha\n" {
				t.Errorf("source sees the fork's write: %q", got)
			}
			if _, err := f.e.Checkpoint(f.ctx, fork.ID, "cp"); err != nil {
				t.Fatal(err)
			}
			writeFiles(t, f.view(fork), map[string]string{"a.txt": "later\n"})
			if _, err := f.e.Rollback(f.ctx, fork.ID, "cp"); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, filepath.Join(f.view(fork), "a.txt")); got != "fork\n" {
				t.Errorf("after rollback: %q", got)
			}
			ch, err := f.e.Changes(f.ctx, f.run(fork.ID))
			if err != nil || len(ch) != 1 {
				t.Errorf("Changes = %+v, %v", ch, err)
			}
			if _, err := f.e.Release(f.ctx, f.path, true); err != nil {
				t.Fatalf("Release: %v", err)
			}
			if got := readFile(t, filepath.Join(f.path, "a.txt")); got != "alpha\n" {
				t.Errorf("after release: %q", got)
			}
		})
	}
}

// TestEngine_ReflinkRefusedAcrossFilesystems checks that a cloning backend
// is refused, naming one that works, when the state directory is elsewhere.
func TestEngine_ReflinkRefusedAcrossFilesystems(t *testing.T) {
	root := loopfs.Mount(t, "xfs")
	e, err := Open(context.Background(), t.TempDir(), testOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ws := filepath.Join(root, "ws")
	writeFiles(t, ws, map[string]string{"f": "x"})
	_, err = e.Init(context.Background(), InitOptions{Path: ws, Backend: "reflink"})
	if !errors.Is(err, tine.ErrUnsupported) || !strings.Contains(err.Error(), "use backend ") || tine.OptionParts(err) == nil {
		t.Fatalf("Init = %v, want ErrUnsupported naming another backend (the option, for the CLI's --backend)", err)
	}
}

func TestEngine_FindWorkspaceByRelativePath(t *testing.T) {
	f := newFixture(t, "copy")
	dir := filepath.Join(t.TempDir(), "plain")
	writeFiles(t, dir, map[string]string{"f": "x"})
	ref, err := f.e.Init(f.ctx, InitOptions{Path: dir, Backend: "copy", Name: "named-otherwise"})
	if err != nil {
		t.Fatal(err)
	}
	old, _ := os.Getwd()
	if err := os.Chdir(filepath.Dir(dir)); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(old)
	w, err := f.e.FindWorkspace(f.ctx, "plain") // a bare directory name, not the workspace's name
	if err != nil || w.ID != ref.Workspace.ID {
		t.Fatalf("FindWorkspace(bare dir name) = %v, %v", w, err)
	}
}

// TestEngine_FindRunByPath: a run written as a path (`tine fork
// /home/me/app`, `tine fork .` from inside it) is the source of the
// workspace there; it said `no workspace ""`.
func TestEngine_FindRunByPath(t *testing.T) {
	f := newFixture(t, "copy")
	for _, ref := range []string{f.path, f.path + "/dir/sub", f.path + "/"} {
		r, err := f.e.FindRun(f.ctx, ref)
		if err != nil || r.Run.ID != f.ref.Run.ID {
			t.Errorf("FindRun(%q) = %v, %v, want the source", ref, r.Run, err)
		}
	}
	old, _ := os.Getwd()
	if err := os.Chdir(filepath.Join(f.path, "dir")); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(old)
	if r, err := f.e.FindRun(f.ctx, "."); err != nil || r.Run.ID != f.ref.Run.ID {
		t.Errorf("FindRun(\".\") inside the workspace = %v, %v, want the source", r.Run, err)
	}
	if _, err := f.e.FindRun(f.ctx, t.TempDir()); !errors.Is(err, tine.ErrNotFound) || !strings.Contains(err.Error(), "no workspace at /") {
		t.Errorf("FindRun(a directory outside every workspace) = %v, want not found naming it", err)
	}
}

// TestEngine_ReleaseWorkspaceWhoseDirectoryIsGone: a workspace whose
// directory was deleted by hand could not be named by its path ("no
// workspace") until the directory existed again, so not released either.
func TestEngine_ReleaseWorkspaceWhoseDirectoryIsGone(t *testing.T) {
	f := newFixture(t, "copy")
	if err := os.RemoveAll(f.path); err != nil {
		t.Fatal(err)
	}
	w, err := f.e.FindWorkspace(f.ctx, f.path)
	if err != nil || w.ID != f.ref.Workspace.ID {
		t.Fatalf("FindWorkspace(its deleted path) = %v, %v, want the workspace", w, err)
	}
	if _, err := f.e.Release(f.ctx, f.path, true); err != nil {
		t.Fatalf("Release(its deleted path) = %v", err)
	}
	if _, err := f.e.FindWorkspace(f.ctx, f.ref.Workspace.ID); !errors.Is(err, tine.ErrNotFound) {
		t.Errorf("the workspace is still recorded after its release: %v", err)
	}
}

// The state directory's own files are tine's alone: the store (every run's
// capability secret) and store-id are created 0600, whatever the umask.
func TestEngine_StateFilesAreTheOwners(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	f := newFixture(t, "copy")
	for _, p := range []string{layout.New(f.home).StoreID(), layout.New(f.home).Store()} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("%s has mode %o, want 600", filepath.Base(p), m)
		}
	}
}
