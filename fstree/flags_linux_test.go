package fstree_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/loopfs"
	"github.com/tinehq/tine/internal/testkit"
)

// chattrDir returns a directory on a filesystem with chattr flags (the temp
// dir if it has them, else a loop-mounted ext4), skipping t unless root:
// setting +i and +a needs CAP_LINUX_IMMUTABLE.
func chattrDir(t *testing.T) string {
	t.Helper()
	testkit.RequireRoot(t, "chattr +i needs CAP_LINUX_IMMUTABLE")
	if _, err := exec.LookPath("chattr"); err != nil {
		t.Skipf("chattr not found: %v", err)
	}
	dir := t.TempDir()
	probe := filepath.Join(dir, "probe")
	write(t, probe, "", 0o644)
	if out, err := exec.Command("chattr", "+i", probe).CombinedOutput(); err != nil {
		t.Logf("the temp dir has no chattr flags (%s); using a loop ext4", strings.TrimSpace(string(out)))
		os.Remove(probe)
		return loopfs.Mount(t, "ext4")
	}
	chattr(t, "-i", probe)
	return dir
}

// chattr runs chattr with args.
func chattr(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("chattr", args...).CombinedOutput(); err != nil {
		t.Fatalf("chattr %v: %v: %s", args, err, out)
	}
}

// pinnedTree makes a tree under root with an immutable file, an
// append-only file and an immutable directory holding a file, and returns
// a cleanup that clears the flags (for when a test fails).
func pinnedTree(t *testing.T, root string) {
	t.Helper()
	write(t, filepath.Join(root, "plain"), "p", 0o644)
	write(t, filepath.Join(root, "sub/immutable"), "i", 0o644)
	write(t, filepath.Join(root, "sub/append.log"), "a", 0o644)
	write(t, filepath.Join(root, "frozen/inside"), "f", 0o644)
	chattr(t, "+i", filepath.Join(root, "sub/immutable"), filepath.Join(root, "frozen"))
	chattr(t, "+a", filepath.Join(root, "sub/append.log"))
	t.Cleanup(func() {
		exec.Command("chattr", "-R", "-i", "-a", root).Run()
	})
}

// TestPurge_Pinned: RemoveAll cannot remove a tree holding immutable or
// append-only entries (the undeletable orphan layer after release); Purge
// clears the flags and removes it.
func TestPurge_Pinned(t *testing.T) {
	dir := filepath.Join(chattrDir(t), "layer")
	pinnedTree(t, dir)
	if err := fstree.RemoveAll(dir); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("RemoveAll of a tree with chattr +i: %v, want EPERM", err)
	}
	must(t, fstree.Purge(dir))
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after Purge: %v", err)
	}
	must(t, fstree.Purge(dir)) // missing is fine
}

// TestCopy_Pinned: a tree holding immutable and append-only entries copies
// (a seal of a run whose agent ran chattr), and the copy is plain files
// that RemoveAll can remove.
func TestCopy_Pinned(t *testing.T) {
	root := chattrDir(t)
	src, dst := filepath.Join(root, "src"), filepath.Join(root, "dst")
	pinnedTree(t, src)
	must(t, os.Mkdir(dst, 0o755))
	must(t, fstree.Copy(context.Background(), src, dst, fstree.CopyOptions{SkipVanished: true}))
	checkSameTree(t, src, dst)
	must(t, fstree.RemoveAll(dst))
}

// TestCopy_KeepPins: with KeepPins every entry keeps its source's
// immutable and append-only flags (a copy backend's fork or version of a
// workspace holding chattr'd files, which lost them, and so did the
// workspace once released), a hard link to an immutable file included;
// Purge still removes the copy.
func TestCopy_KeepPins(t *testing.T) {
	root := chattrDir(t)
	src, dst := filepath.Join(root, "src"), filepath.Join(root, "dst")
	pinnedTree(t, src)
	chattr(t, "-i", filepath.Join(src, "sub/immutable"))
	must(t, os.Link(filepath.Join(src, "sub/immutable"), filepath.Join(src, "sub/link")))
	chattr(t, "+i", filepath.Join(src, "sub/immutable"))
	t.Cleanup(func() { exec.Command("chattr", "-R", "-i", "-a", dst).Run() })
	must(t, os.Mkdir(dst, 0o755))
	must(t, fstree.Copy(context.Background(), src, dst, fstree.CopyOptions{KeepPins: true}))
	for name, want := range map[string]fstree.Pins{"plain": 0, "sub": 0, "sub/immutable": 0x10, "sub/link": 0x10,
		"sub/append.log": 0x20, "frozen": 0x10, "frozen/inside": 0, ".": 0} {
		if got, err := fstree.ReadPins(filepath.Join(dst, name)); err != nil || got != want {
			t.Errorf("%s: pins %#x, %v; want %#x", name, got, err, want)
		}
	}
	must(t, fstree.Purge(dst))
}

// TestMoveContents_Pinned: an immutable entry cannot be renamed; the error
// names it and wraps ErrPinned, and everything moved before it is moved
// back.
func TestMoveContents_Pinned(t *testing.T) {
	root := chattrDir(t)
	src, dst := filepath.Join(root, "src"), filepath.Join(root, "dst")
	write(t, filepath.Join(src, "a"), "a", 0o644)
	write(t, filepath.Join(src, "m"), "m", 0o644)
	write(t, filepath.Join(src, "z"), "z", 0o644)
	chattr(t, "+i", filepath.Join(src, "m"))
	t.Cleanup(func() { exec.Command("chattr", "-i", filepath.Join(src, "m")).Run() })
	must(t, os.Mkdir(dst, 0o755))
	err := fstree.MoveContents(src, dst)
	if !errors.Is(err, fstree.ErrPinned) || !strings.Contains(err.Error(), filepath.Join(src, "m")) {
		t.Fatalf("MoveContents with an immutable file: %v, want ErrPinned naming it", err)
	}
	for _, name := range []string{"a", "m", "z"} {
		if _, err := os.Lstat(filepath.Join(src, name)); err != nil {
			t.Errorf("%s not back in the source: %v", name, err)
		}
	}
}
