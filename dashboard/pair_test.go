package dashboard

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine/layer"
)

// TestDiffChanges_SymlinkedDirectoryDiffers: a fork whose directory is a
// symlink to a host directory holding the other fork's file has that path
// compared as what it is in the fork (a symlink on the way: different),
// never through the symlink (which read the host file and said "same").
func TestDiffChanges_SymlinkedDirectoryDiffers(t *testing.T) {
	a, b, host := t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{host, filepath.Join(b, "d")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "f"), []byte("guess\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(host, filepath.Join(a, "d")); err != nil {
		t.Fatal(err)
	}
	ch := []layer.Change{{Path: "d/f", Kind: layer.Added, Type: "file"}}
	diffs, same := diffChanges(ch, ch, a, b)
	if same != 0 || len(diffs) != 1 {
		t.Fatalf("same %d, diffs %v: d/f was compared through a's symlink", same, diffs)
	}
}
