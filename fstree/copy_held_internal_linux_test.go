//go:build linux

package fstree

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine/internal/testkit"
)

// swapForSymlink moves directory dir aside and puts a symlink to target
// in its place, as a fork or a user does to a tree Copy is copying.
func swapForSymlink(t *testing.T, dir, target string) {
	t.Helper()
	mustT(t, os.Rename(dir, dir+".aside"))
	mustT(t, os.Symlink(target, dir))
}

// TestCopy_SourceParentSwapped: a source directory turned into a symlink to
// a hidden directory after Copy entered it never has the hidden file
// copied: Copy reads the directory it opened, not the name.
func TestCopy_SourceParentSwapped(t *testing.T) {
	hidden, marker := testkit.Hidden(t, "f")
	src, dst := t.TempDir(), t.TempDir()
	mustT(t, os.Mkdir(filepath.Join(src, "d"), 0o755))
	mustT(t, os.WriteFile(filepath.Join(src, "d", "f"), []byte("own\n"), 0o644))
	err := copyWithHook(t, src, dst, true, once(filepath.Join(src, "d", "f"), func() {
		swapForSymlink(t, filepath.Join(src, "d"), hidden)
	}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dst, "d", "f"))
	if err != nil || strings.Contains(string(b), marker) {
		t.Fatalf("copied d/f: %q, %v; want the source's own file", b, err)
	}
}

// TestCopy_DestinationParentSwapped: a directory Copy made in dst, turned
// into a symlink to another directory while Copy fills it, never has
// anything written into that directory.
func TestCopy_DestinationParentSwapped(t *testing.T) {
	src, dst, elsewhere := t.TempDir(), t.TempDir(), t.TempDir()
	mustT(t, os.Mkdir(filepath.Join(src, "d"), 0o755))
	mustT(t, os.WriteFile(filepath.Join(src, "d", "f"), []byte("own\n"), 0o644))
	mustT(t, os.Mkdir(filepath.Join(src, "d", "sub"), 0o755))
	err := copyWithHook(t, src, dst, false, once(filepath.Join(src, "d", "f"), func() {
		swapForSymlink(t, filepath.Join(dst, "d"), elsewhere)
	}))
	if err != nil {
		t.Fatal(err)
	}
	if names := readNamesT(t, elsewhere); len(names) != 0 {
		t.Fatalf("Copy wrote %v into the directory a symlink in dst named", names)
	}
	if _, err := os.Stat(filepath.Join(dst, "d.aside", "f")); err != nil {
		t.Fatalf("the copy did not land in the directory Copy made: %v", err)
	}
}

// readNamesT lists dir.
func readNamesT(t *testing.T, dir string) []string {
	t.Helper()
	names, err := readNames(dir)
	mustT(t, err)
	return names
}
