package forkrun

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/layer"
)

// overlayTests puts a fork's test files over another tree: changed and
// added ones copied with their mode, deleted ones removed, other files
// left alone.
func TestOverlayTests(t *testing.T) {
	view, dir := t.TempDir(), t.TempDir()
	write := func(root, name, body string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	write(view, "calc_test.go", "new test", 0o644)
	write(view, "tests/run.sh", "new script", 0o755)
	write(dir, "calc_test.go", "old test", 0o644)
	write(dir, "old_test.go", "deleted by the fork", 0o644)
	write(dir, "calc.go", "the other side's code", 0o644)
	changes := []layer.Change{
		{Path: "calc_test.go", Kind: layer.Modified, Type: "file"},
		{Path: "tests/run.sh", Kind: layer.Added, Type: "file"},
		{Path: "old_test.go", Kind: layer.Deleted, Type: "file"},
	}
	held, err := fstree.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := overlayTests(held, view, changes); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"calc_test.go": "new test", "tests/run.sh": "new script", "calc.go": "the other side's code"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", name, b, err, want)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "tests/run.sh")); err != nil || st.Mode().Perm() != 0o755 {
		t.Errorf("tests/run.sh: %v, %v; want mode 0755", st, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "old_test.go")); !os.IsNotExist(err) {
		t.Errorf("old_test.go is still there: %v", err)
	}
}
