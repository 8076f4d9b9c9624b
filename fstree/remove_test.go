package fstree_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine/fstree"
)

func TestRemoveAll(t *testing.T) {
	root := filepath.Join(t.TempDir(), "tree")
	write(t, filepath.Join(root, "ro/sub/f"), "x", 0o444)
	must(t, os.Chmod(filepath.Join(root, "ro/sub"), 0o500))
	must(t, os.Chmod(filepath.Join(root, "ro"), 0o000))
	must(t, fstree.RemoveAll(root))
	if _, err := os.Lstat(root); !os.IsNotExist(err) {
		t.Fatalf("tree still there: %v", err)
	}
	must(t, fstree.RemoveAll(root)) // missing: not an error
}
