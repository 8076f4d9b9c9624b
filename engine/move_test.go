package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/mnt"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/layer/overlay"
)

func requireRootOverlay(t *testing.T) {
	t.Helper()
	// Tests use small deltas: let any delta of a few bytes be renamed.
	oldBytes, oldFiles := moveMinBytes, moveMinFiles
	moveMinBytes, moveMinFiles = 1, 1<<30
	t.Cleanup(func() { moveMinBytes, moveMinFiles = oldBytes, oldFiles })
	for _, b := range backends(t) {
		if b == "overlay" {
			return
		}
	}
	t.Skip("requires root and overlay: sealing by rename is an overlay feature")
}

// lastSealedBy returns how the last fork of run sealed it, from e's event
// log (exported to the external tests as LastSealedBy).
func lastSealedBy(t *testing.T, e *Engine, run string) string {
	t.Helper()
	evs, err := e.Events(context.Background(), tine.EventFilter{Run: run})
	if err != nil {
		t.Fatal(err)
	}
	for i := len(evs) - 1; i >= 0; i-- {
		var d struct {
			SealedBy string `json:"sealed_by"`
		}
		json.Unmarshal(evs[i].Detail, &d)
		if d.SealedBy != "" {
			return d.SealedBy
		}
	}
	return ""
}

func TestEngine_IdleParentSealsByRename(t *testing.T) {
	requireRootOverlay(t)
	f := newFixture(t, "overlay")
	big := make([]byte, 4<<20)
	writeFiles(t, f.path, map[string]string{"big.bin": string(big), "a.txt": "source\n"})
	res := f.fork(1)
	if got := lastSealedBy(t, f.e, f.ref.Run.ID); got != "rename" {
		t.Fatalf("idle source sealed by %q, want rename", got)
	}
	src := f.run("source")
	if src.Run.Base != res.Version.ID {
		t.Errorf("source base %s, want the fork point %s", src.Run.Base, res.Version.ID)
	}
	// The source still shows, and diffs, everything since init.
	if got := readFile(t, filepath.Join(f.path, "a.txt")); got != "source\n" {
		t.Errorf("source a.txt = %q", got)
	}
	ch, err := f.e.Changes(f.ctx, src)
	if err != nil || len(ch) != 2 {
		t.Errorf("source changes since init: %+v, %v", ch, err)
	}
	// A second fork of the unchanged source seals an empty delta.
	res2 := f.fork(1)
	var top *tine.Layer
	f.e.store.View(f.ctx, func(tx tine.Tx) error {
		top, err = tx.Layer(res2.Version.Layers[len(res2.Version.Layers)-1])
		return err
	})
	if top == nil || top.Bytes != 0 {
		t.Errorf("second fork's new layer: %+v, want 0 bytes", top)
	}
	if got := readFile(t, filepath.Join(f.view(res2.Forks[0]), "a.txt")); got != "source\n" {
		t.Errorf("second fork a.txt = %q", got)
	}
	// Writes after the rename land in the source only.
	writeFiles(t, f.path, map[string]string{"a.txt": "after\n"})
	if got := readFile(t, filepath.Join(f.view(res.Forks[0]), "a.txt")); got != "source\n" {
		t.Errorf("fork sees the source's later write: %q", got)
	}
}

func TestEngine_SmallDeltaSealsByCopy(t *testing.T) {
	requireRootOverlay(t)
	moveMinBytes = 1 << 20
	f := newFixture(t, "overlay")
	writeFiles(t, f.path, map[string]string{"a.txt": "small\n"})
	f.fork(1)
	if got := lastSealedBy(t, f.e, f.ref.Run.ID); got != "copy" {
		t.Errorf("small delta sealed by %q, want copy", got)
	}
	writeFiles(t, f.path, map[string]string{"big.bin": string(make([]byte, 2<<20))})
	f.fork(1)
	if got := lastSealedBy(t, f.e, f.ref.Run.ID); got != "rename" {
		t.Errorf("2 MiB delta sealed by %q, want rename", got)
	}
}

// TestEngine_BusySourceNotWalked is a fork of a busy source (a file held
// open in it) paying a walk of up to moveMinFiles entries of its delta
// (8-12 ms of a 40 ms fork) to decide whether sealing by rename would pay,
// before finding that the view cannot be unmounted. A run last sealed by
// copy tries the unmount first. Once nothing holds it, a small delta is
// copied and the source mounted again as it was; a big one is moved.
func TestEngine_BusySourceNotWalked(t *testing.T) {
	requireRootOverlay(t)
	moveMinBytes = 1 << 20
	walks := 0
	walk := deltaAtLeast
	deltaAtLeast = func(dir string, minBytes int64, minFiles int) bool { walks++; return walk(dir, minBytes, minFiles) }
	t.Cleanup(func() { deltaAtLeast = walk })
	f := newFixture(t, "overlay")
	writeFiles(t, f.path, map[string]string{"big.bin": string(make([]byte, 2<<20))})
	held, err := os.Open(filepath.Join(f.path, "a.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	f.fork(1)
	if got := lastSealedBy(t, f.e, f.ref.Run.ID); got != "copy" {
		t.Fatalf("busy source sealed by %q, want copy", got)
	}
	walks = 0
	writeFiles(t, f.path, map[string]string{"a.txt": "busy\n"})
	f.fork(1)
	if got := lastSealedBy(t, f.e, f.ref.Run.ID); got != "copy" || walks != 0 {
		t.Errorf("busy source, last sealed by copy: sealed by %q after %d walks of its delta, want copy and none", got, walks)
	}
	held.Close()

	// Idle now, a small delta since (big.bin was copied by the seals
	// before, but is still in the delta): the unmount succeeds, and the
	// source is mounted again to be copied.
	moveMinBytes = 4 << 20
	writeFiles(t, f.path, map[string]string{"a.txt": "idle\n"})
	res := f.fork(1)
	if got := lastSealedBy(t, f.e, f.ref.Run.ID); got != "copy" {
		t.Errorf("idle source with a small delta sealed by %q, want copy", got)
	}
	if got := readFile(t, filepath.Join(f.e.Path(f.ref.Workspace, res.Forks[0]), "a.txt")); got != "idle\n" {
		t.Errorf("fork a.txt = %q, want the source's", got)
	}
	writeFiles(t, f.path, map[string]string{"after.txt": "after\n"})
	src := f.run("source")
	if got := readFile(t, filepath.Join(f.e.Path(src.Workspace, src.Run), "after.txt")); got != "after\n" {
		t.Errorf("the source's view after the fork does not show what is written at its path: %q", got)
	}
	if ok, err := mnt.IsMountpoint(f.path); !ok || err != nil {
		t.Errorf("the workspace path is not mounted again after the fork: %v %v", ok, err)
	}
	// Copied for being small, not for being held: the next fork walks
	// the delta and leaves the view mounted (a process entering the
	// workspace then would find it empty).
	id := mountID(t, f.path)
	walks = 0
	writeFiles(t, f.path, map[string]string{"a.txt": "idle again\n"})
	f.fork(1)
	if got := lastSealedBy(t, f.e, f.ref.Run.ID); got != "copy" || walks != 1 || mountID(t, f.path) != id {
		t.Errorf("idle source with a small delta, last copied for being small: sealed by %q after %d walks, mount %d then %d; want copy after 1 walk, the same mount",
			got, walks, id, mountID(t, f.path))
	}
	moveMinBytes = 1 << 20
	f.fork(1)
	if got := lastSealedBy(t, f.e, f.ref.Run.ID); got != "rename" {
		t.Errorf("idle source with a 2 MiB delta sealed by %q, want rename", got)
	}
}

// TestEngine_InterruptedMove crashes a seal-by-rename before and after its
// records are written; the next start moves the delta back, or finishes.
func TestEngine_InterruptedMove(t *testing.T) {
	requireRootOverlay(t)
	for _, committed := range []bool{false, true} {
		name := map[bool]string{false: "BeforeRecord", true: "AfterRecord"}[committed]
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, "overlay")
			writeFiles(t, f.path, map[string]string{"a.txt": "delta\n"})
			be, _ := f.e.backend("overlay")
			var u undo
			lay, v, moved, err := newSealTx(f.e, f.ref).sealMove(f.ctx, be, tine.VersionCheckpoint, "", &u)
			if err != nil || !moved {
				t.Fatalf("sealMove: %v, %v", moved, err)
			}
			if committed {
				err = f.e.store.Update(f.ctx, func(tx tine.Tx) error {
					f.ref.Run.Base = v.ID
					return firstError(tx.PutLayer(lay), tx.PutVersion(v), tx.UpdateRun(f.ref.Run))
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			// Crash: nothing more happens in this process; the workspace is unmounted.
			f.reopen()
			if got := readFile(t, filepath.Join(f.path, "a.txt")); got != "delta\n" {
				t.Errorf("a.txt after recovery = %q", got)
			}
			if _, err := os.Stat(newSealTx(f.e, f.ref).moveJournalPath()); !os.IsNotExist(err) {
				t.Errorf("journal left: %v", err)
			}
			_, err = os.Stat(f.e.lay.Workspace(f.ref.Workspace.ID).Layer(lay.ID))
			if committed != (err == nil) {
				t.Errorf("layer dir exists=%v, want %v", err == nil, committed)
			}
			// And the workspace goes on working.
			res := f.fork(1)
			if got := readFile(t, filepath.Join(f.view(res.Forks[0]), "a.txt")); got != "delta\n" {
				t.Errorf("fork after recovery: %q", got)
			}
		})
	}
}

// shallow makes f's engine compact overlay stacks past depth 3.
func shallow(f *fixture) {
	f.e.backend = func(name string) (layer.Backend, error) {
		if name == "overlay" {
			return overlay.New(overlay.WithMaxDepth(3)), nil
		}
		return f.e.backends.make(name)
	}
}

// Past the depth limit a seal compacts the stack into one layer; an idle
// parent is then rebased onto it, so the next seals stack again instead of
// compacting every time.
func TestEngine_CompactionRebasesParent(t *testing.T) {
	requireRootOverlay(t)
	f := newFixture(t, "overlay")
	shallow(f)
	compactions := 0
	for i := range 8 {
		writeFiles(t, f.path, map[string]string{"a.txt": fmt.Sprintf("round %d\n", i)})
		res := f.fork(1)
		if len(res.Version.Layers) == 1 {
			compactions++
		}
		if got := readFile(t, filepath.Join(f.view(res.Forks[0]), "a.txt")); got != fmt.Sprintf("round %d\n", i) {
			t.Fatalf("fork %d sees %q", i, got)
		}
		src := f.run("source")
		if src.Run.Base != res.Version.ID {
			t.Errorf("fork %d: the source was not rebased onto its fork point", i)
		}
		if got := readFile(t, filepath.Join(f.path, "dir/b.txt")); got != "beta\n" {
			t.Fatalf("source lost dir/b.txt after fork %d: %q", i, got)
		}
	}
	if compactions < 1 || compactions > 3 {
		t.Errorf("%d compactions in 8 forks at depth 3; want every few, not every fork", compactions)
	}
	if _, err := os.Stat(filepath.Join(f.e.backendRun(f.ref.Workspace, f.ref.Run).Dir, "upper.compacted")); !os.IsNotExist(err) {
		t.Errorf("the set-aside delta remains: %v", err)
	}
}

// A crash between the compaction and its record puts the delta back.
func TestEngine_InterruptedCompactionRebase(t *testing.T) {
	requireRootOverlay(t)
	f := newFixture(t, "overlay")
	shallow(f)
	for i := range 2 {
		writeFiles(t, f.path, map[string]string{"a.txt": fmt.Sprintf("round %d\n", i)})
		f.fork(1)
	}
	writeFiles(t, f.path, map[string]string{"a.txt": "unsealed\n"})
	be, _ := f.e.backend("overlay")
	var u undo
	_, v, moved, err := newSealTx(f.e, f.run("source")).sealFast(f.ctx, be, tine.VersionCheckpoint, "", &u)
	if err != nil || !moved || len(v.Layers) != 1 {
		t.Fatalf("sealFast at the depth limit: moved %v, %d layers, %v", moved, len(v.Layers), err)
	}
	f.reopen() // crash before the version is recorded
	if got := readFile(t, filepath.Join(f.path, "a.txt")); got != "unsealed\n" {
		t.Errorf("a.txt after recovery = %q", got)
	}
	if _, err := os.Stat(newSealTx(f.e, f.ref).moveJournalPath()); !os.IsNotExist(err) {
		t.Errorf("journal left: %v", err)
	}
}
