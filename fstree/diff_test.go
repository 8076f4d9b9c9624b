package fstree_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/layer"
)

// diffBase fills root with the tree TestDiff changes.
func diffBase(t *testing.T, root string) {
	t.Helper()
	for p, c := range map[string]string{
		"a.txt": "alpha", "same-size.txt": "12345", "stat-cache.txt": "12345",
		"mode.txt": "m", "keep": "kept", "gone/x": "x", "gone/sub/y": "y",
		"f2d": "abc", "d2l/z": "z", "sort/old": "o",
	} {
		write(t, filepath.Join(root, p), c, 0o644)
	}
	must(t, os.Symlink("x", filepath.Join(root, "ln")))
	must(t, os.Mkdir(filepath.Join(root, "dmode"), 0o755))
	old := time.Now().Add(-time.Hour)
	for _, p := range []string{"same-size.txt", "stat-cache.txt"} {
		must(t, os.Chtimes(filepath.Join(root, p), old, old))
	}
}

// diffChange applies to view every change TestDiff expects to see (and one,
// stat-cache.txt, that the stat cache hides by design).
func diffChange(t *testing.T, view string) {
	t.Helper()
	at := func(p string) string { return filepath.Join(view, p) }
	write(t, at("new.txt"), "fresh", 0o644)
	write(t, at("a.txt"), "ALPHA!", 0o644)
	write(t, at("same-size.txt"), "54321", 0o644)
	fi, err := os.Stat(at("stat-cache.txt"))
	must(t, err)
	write(t, at("stat-cache.txt"), "54321", 0o644)
	must(t, os.Chtimes(at("stat-cache.txt"), fi.ModTime(), fi.ModTime()))
	must(t, os.Chmod(at("mode.txt"), 0o600))
	must(t, os.RemoveAll(at("gone")))
	must(t, os.Remove(at("f2d")))
	write(t, at("f2d/inner"), "in", 0o644)
	must(t, os.RemoveAll(at("d2l")))
	must(t, os.Symlink("target", at("d2l")))
	write(t, at("newdir/a/b"), "b", 0o644)
	must(t, os.Remove(at("ln")))
	must(t, os.Symlink("yy", at("ln")))
	must(t, os.Chmod(at("dmode"), 0o700))
	write(t, at("sort/a/x"), "x", 0o644)
	write(t, at("sort/a-b"), "ab", 0o644)
}

func TestDiff(t *testing.T) {
	base, view := t.TempDir(), t.TempDir()
	diffBase(t, base)
	must(t, fstree.Copy(context.Background(), base, view, fstree.CopyOptions{}))
	diffChange(t, view)
	got, err := fstree.Diff(context.Background(), base, view)
	must(t, err)
	want := []layer.Change{
		{Path: "a.txt", Kind: layer.Modified, Type: "file", Size: 6, OldSize: 5},
		{Path: "d2l", Kind: layer.TypeChanged, Type: "symlink", Size: 6},
		{Path: "d2l/z", Kind: layer.Deleted, Type: "file", OldSize: 1},
		{Path: "dmode", Kind: layer.Modified, Type: "dir"},
		{Path: "f2d", Kind: layer.TypeChanged, Type: "dir", OldSize: 3},
		{Path: "f2d/inner", Kind: layer.Added, Type: "file", Size: 2},
		{Path: "gone", Kind: layer.Deleted, Type: "dir"},
		{Path: "gone/sub", Kind: layer.Deleted, Type: "dir"},
		{Path: "gone/sub/y", Kind: layer.Deleted, Type: "file", OldSize: 1},
		{Path: "gone/x", Kind: layer.Deleted, Type: "file", OldSize: 1},
		{Path: "ln", Kind: layer.Modified, Type: "symlink", Size: 2, OldSize: 1},
		{Path: "mode.txt", Kind: layer.Modified, Type: "file", Size: 1, OldSize: 1},
		{Path: "new.txt", Kind: layer.Added, Type: "file", Size: 5},
		{Path: "newdir", Kind: layer.Added, Type: "dir"},
		{Path: "newdir/a", Kind: layer.Added, Type: "dir"},
		{Path: "newdir/a/b", Kind: layer.Added, Type: "file", Size: 1},
		{Path: "same-size.txt", Kind: layer.Modified, Type: "file", Size: 5, OldSize: 5},
		{Path: "sort/a", Kind: layer.Added, Type: "dir"},
		{Path: "sort/a-b", Kind: layer.Added, Type: "file", Size: 2},
		{Path: "sort/a/x", Kind: layer.Added, Type: "file", Size: 1},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Diff:\n got %+v\nwant %+v", got, want)
	}
}

func TestDiff_Identical(t *testing.T) {
	base, view := t.TempDir(), t.TempDir()
	buildTree(t, base)
	must(t, fstree.Copy(context.Background(), base, view, fstree.CopyOptions{}))
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(view, "ro"), 0o755) })
	got, err := fstree.Diff(context.Background(), base, view)
	must(t, err)
	if len(got) != 0 {
		t.Errorf("Diff of a copy = %+v, want none", got)
	}
}

func TestDiff_Canceled(t *testing.T) {
	base, view := t.TempDir(), t.TempDir()
	write(t, filepath.Join(view, "f"), "x", 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := fstree.Diff(ctx, base, view); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func BenchmarkDiff(b *testing.B) {
	base, view := filepath.Join(b.TempDir(), "base"), filepath.Join(b.TempDir(), "view")
	must(b, os.Mkdir(base, 0o755))
	must(b, os.Mkdir(view, 0o755))
	smallTree(b, base, 2000)
	must(b, fstree.Copy(context.Background(), base, view, fstree.CopyOptions{}))
	b.ResetTimer()
	for range b.N {
		if _, err := fstree.Diff(context.Background(), base, view); err != nil {
			b.Fatal(err)
		}
	}
}
