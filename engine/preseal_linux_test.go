package engine

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/layer/overlay"
)

// Background seals of a busy source, one after each change, well past the
// length at which an incremental chain starts again with a whole copy
// (overlay.ChainMax): each superseded seal is dropped with the layers only
// it had, so the source keeps one background seal and the layers on disk
// stay those the store records, within about one copy of the delta. Before,
// every seal was kept, and each chain started again kept another whole
// copy of the delta.
func TestPreseal_DropsSupersededSeals(t *testing.T) {
	requireRootOverlay(t)
	f := newFixture(t, "overlay")
	delta := map[string]string{}
	for i := range 200 {
		delta[fmt.Sprintf("node_modules/p%d/f%d.js", i%10, i)] = strings.Repeat("x", 4096)
	}
	writeFiles(t, f.path, delta)
	for i := range overlay.ChainMax + 4 {
		writeFiles(t, f.path, map[string]string{"edit.txt": fmt.Sprintf("edit %d\n", i)})
		res, err := f.e.Preseal(f.ctx, f.ref)
		if err != nil || res == nil {
			t.Fatalf("seal %d: %v %v", i, res, err)
		}
		var sealed []string
		for _, v := range versions(t, f) {
			if v.Kind == tine.VersionSealed {
				sealed = append(sealed, v.ID)
			}
		}
		if len(sealed) != 1 || sealed[0] != res.Version.ID {
			t.Fatalf("after seal %d (%s) the sealed versions are %q, want only it", i, res.Version.ID, sealed)
		}
	}
	checkAgrees(t, f, "after the background seals")
	used, err := fstree.DiskUsage(f.e.lay.Workspace(f.ref.Workspace.ID).Layers())
	if err != nil {
		t.Fatal(err)
	}
	if once := int64(200 * 4096); used > once*3/2 {
		t.Errorf("the layers use %d bytes for a delta of %d", used, once)
	}
	fr := f.fork(1)
	if got, _ := os.ReadFile(filepath.Join(f.view(fr.Forks[0]), "edit.txt")); string(got) != fmt.Sprintf("edit %d\n", overlay.ChainMax+3) {
		t.Errorf("the fork after the seals shows edit.txt %q", got)
	}
	for _, v := range versions(t, f) {
		if v.Kind == tine.VersionSealed {
			t.Errorf("the fork kept the background seal %s it stacked on", v.ID)
		}
	}
	checkAgrees(t, f, "after the fork")
}

// A busy source forked again and again, each fork after a change and a
// background seal: every fork stacks on the background seal, none copies
// the whole delta. Before, the background seal's layer and the fork's own
// filled the chain of incremental seals (layer.ChainMax) every eighth
// fork, which then copied the whole delta itself; the background seal now
// starts a new chain before that.
func TestPreseal_ForksNeverReachTheEndOfTheChain(t *testing.T) {
	requireRootOverlay(t)
	f := newFixture(t, "overlay")
	delta := map[string]string{}
	for i := range 200 {
		delta[fmt.Sprintf("node_modules/p%d/f%d.js", i%10, i)] = "x"
	}
	writeFiles(t, f.path, delta)
	hold := exec.Command("sleep", "600") // the view stays mounted: every seal is by copy
	hold.Dir = f.path
	if err := hold.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { hold.Process.Kill(); hold.Wait() }()
	// A first background seal made while the delta was still written,
	// as the daemon's first look at a run does: the chain is one longer.
	if _, err := f.e.Preseal(f.ctx, f.ref); err != nil {
		t.Fatal(err)
	}
	for i := range 2*layer.ChainMax + 2 {
		writeFiles(t, f.path, map[string]string{"edit.txt": fmt.Sprintf("edit %d\n", i)})
		if _, err := f.e.Preseal(f.ctx, f.ref); err != nil {
			t.Fatalf("background seal %d: %v", i, err)
		}
		fr := f.fork(1)
		if s := fr.Seal; s == nil || s.Whole || !s.Presealed {
			t.Fatalf("fork %d after its background seal: seal %+v, want it stacked on the background seal", i, s)
		}
	}
}

// An undone seal (a background seal giving way to a command) names, for
// the next seal to stack on, what was named before it.
func TestNoteSealed_Undone(t *testing.T) {
	f := newFixture(t, "copy")
	m := newSealTx(f.e, f.ref)
	m.cost = &SealReport{}
	path := f.e.lay.Run(f.ref.Workspace.ID, f.ref.Run.ID).Sealed()
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := m.noteSealed(&tine.Version{ID: "v1"})(); err != nil { // none before: undone, none after
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("an undone first seal left %s: %v", path, err)
	}
	m.noteSealed(&tine.Version{ID: "v1"})
	if err := m.noteSealed(&tine.Version{ID: "v2"})(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "v1" {
		t.Errorf("after the seal of v2 was undone the last seal is %q, want v1", b)
	}
}
