package fstree_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine/fstree"
)

func TestSamePath(t *testing.T) {
	big := strings.Repeat("0123456789abcdef", 10000) // spans several read chunks
	cases := []struct {
		name string
		a, b func(t *testing.T, p string)
		same bool
	}{
		{"same file", file("hello", 0o644), file("hello", 0o644), true},
		{"same big file", file(big, 0o644), file(big, 0o644), true},
		{"big file differs at end", file(big+"x", 0o644), file(big+"y", 0o644), false},
		{"same size other bytes", file("hello", 0o644), file("jello", 0o644), false},
		{"other size", file("hello", 0o644), file("hello!", 0o644), false},
		{"other mode", file("x", 0o644), file("x", 0o600), false},
		{"setuid", file("x", 0o755), file("x", 0o755|fs.ModeSetuid), false},
		{"empty files", file("", 0o644), file("", 0o644), true},
		{"same symlink", link("t"), link("t"), true},
		{"other symlink", link("t"), link("u"), false},
		{"file vs symlink", file("t", 0o777), link("t"), false},
		{"dirs same mode", dir(0o755, "a"), dir(0o755, "b"), true},
		{"dirs other mode", dir(0o755, ""), dir(0o700, ""), false},
		{"sticky dir", dir(0o777, ""), dir(0o777|fs.ModeSticky, ""), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
			c.a(t, a)
			c.b(t, b)
			got, err := fstree.SamePath(a, b)
			must(t, err)
			if got != c.same {
				t.Errorf("SamePath = %v, want %v", got, c.same)
			}
		})
	}
}

func TestSamePath_Missing(t *testing.T) {
	if _, err := fstree.SamePath(filepath.Join(t.TempDir(), "no"), t.TempDir()); err == nil {
		t.Fatal("no error for a missing path")
	}
}

// file returns a maker of a regular file.
func file(content string, perm fs.FileMode) func(*testing.T, string) {
	return func(t *testing.T, p string) { write(t, p, content, perm) }
}

// link returns a maker of a symlink to target.
func link(target string) func(*testing.T, string) {
	return func(t *testing.T, p string) { must(t, os.Symlink(target, p)) }
}

// dir returns a maker of a directory with perm holding one file, if named.
func dir(perm fs.FileMode, child string) func(*testing.T, string) {
	return func(t *testing.T, p string) {
		must(t, os.Mkdir(p, 0o755))
		if child != "" {
			write(t, filepath.Join(p, child), child, 0o644)
		}
		must(t, os.Chmod(p, perm))
	}
}
