package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
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
