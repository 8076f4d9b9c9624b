package fstree_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine/fstree"
)

func TestDiskUsage(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "a"), "12345", 0o644)
	write(t, filepath.Join(root, "d/b"), "123", 0o644)
	must(t, os.Link(filepath.Join(root, "a"), filepath.Join(root, "d/a2")))
	must(t, os.Symlink("a-long-symlink-target", filepath.Join(root, "l")))
	got, err := fstree.DiskUsage(root)
	must(t, err)
	if got != 8 {
		t.Errorf("DiskUsage = %d, want 8", got)
	}
	if _, err := fstree.DiskUsage(filepath.Join(root, "missing")); err == nil {
		t.Error("DiskUsage of a missing dir: no error")
	}
}
