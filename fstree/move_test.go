package fstree_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tinehq/tine/fstree"
)

// names returns the sorted names in dir.
func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	must(t, err)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestMoveContents(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	buildTree(t, src)
	want := snapshot(t, src)
	must(t, fstree.MoveContents(src, dst))
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(dst, "ro"), 0o755) })
	if n := names(t, src); len(n) != 0 {
		t.Errorf("src still holds %v", n)
	}
	got := snapshot(t, dst)
	delete(want, ".")
	delete(got, ".")
	for p, w := range want {
		if g, ok := got[p]; !ok || !equalEntry(w, g) || w.inode != g.inode {
			t.Errorf("%s: got %+v, want %+v (same inode)", p, g, w)
		}
	}
}

func TestMoveContents_RollsBack(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		write(t, filepath.Join(src, n), n, 0o644)
	}
	write(t, filepath.Join(dst, "c"), "taken", 0o644)
	if err := fstree.MoveContents(src, dst); err == nil {
		t.Fatal("moving onto an existing name: no error")
	}
	if got, want := names(t, src), []string{"a", "b", "c", "d", "e"}; !slices.Equal(got, want) {
		t.Errorf("src after rollback = %v, want %v", got, want)
	}
	if got := names(t, dst); !slices.Equal(got, []string{"c"}) {
		t.Errorf("dst after rollback = %v, want [c]", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "c")); string(b) != "taken" {
		t.Errorf("dst/c overwritten: %q", b)
	}
}
