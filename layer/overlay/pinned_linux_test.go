package overlay_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine/engine/enginetest"
	"github.com/tinehq/tine/internal/loopfs"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/layer/overlay"
)

// TestImportMove_PinnedFile: a workspace holding an immutable file below
// its top level (chattr +i; init moves the entries into the first layer by
// rename, flag and all) can be forked, and its layer removed afterwards:
// release used to leave that layer behind, undeletable, exit 1, and every
// later command warned of the orphan.
func TestImportMove_PinnedFile(t *testing.T) {
	enginetest.RequireOverlay(t, rootWhy)
	root := loopfs.Mount(t, "ext4")
	ws, l := filepath.Join(root, "ws"), filepath.Join(root, "layer0")
	if err := os.MkdirAll(filepath.Join(ws, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	pinned := filepath.Join(ws, "etc", "pinned.conf")
	if err := os.WriteFile(pinned, []byte("do not touch"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("chattr", "+i", pinned).CombinedOutput(); err != nil {
		t.Skipf("chattr +i: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-R", "-i", root).Run() })
	ctx := context.Background()
	b := overlay.New()
	if err := b.Import(ctx, ws, l, true); err != nil {
		t.Fatal(err)
	}
	r := layer.Run{ID: "r", Dir: filepath.Join(root, "run"), View: filepath.Join(root, "run", "view")}
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := b.Activate(ctx, r, []string{l}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.View, "etc", "pinned.conf"), []byte("x"), 0o644); !errors.Is(err, fs.ErrPermission) {
		t.Errorf("write to the immutable file through the view: %v, want EPERM", err)
	}
	v, err := b.Seal(ctx, r, []string{l}, filepath.Join(root, "layer1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Deactivate(ctx, r); err != nil {
		t.Fatal(err)
	}
	for _, l := range v {
		if err := b.RemoveLayer(ctx, l); err != nil {
			t.Fatalf("RemoveLayer(%s): %v", l, err)
		}
		if _, err := os.Lstat(l); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("layer %s left behind: %v", l, err)
		}
	}
}

// TestRestore_WorkDirectoryLeftFull: a view mounted again over a work
// directory overlay cannot reset (its work/work left holding a tree, as a
// crash mid copy-up or an old mount alive elsewhere leaves it) is
// writable: the work directory is moved aside for an empty one, and
// removed with the run. Before, overlay mounted the view read-only,
// saying so only in the kernel's log, and every write in the run failed
// with "Read-only file system".
func TestRestore_WorkDirectoryLeftFull(t *testing.T) {
	enginetest.RequireOverlay(t, rootWhy)
	root := t.TempDir()
	l := filepath.Join(root, "layer0")
	if err := os.MkdirAll(l, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b := overlay.New()
	r := layer.Run{ID: "r", Dir: filepath.Join(root, "run"), View: filepath.Join(root, "run", "view")}
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := b.Activate(ctx, r, []string{l}); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("umount", r.View).Run(); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(r.Dir, "work", "work", "a", "b", "c", "d")
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(deep, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.Restore(ctx, r, []string{l}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.View, "new.txt"), []byte("new\n"), 0o644); err != nil {
		t.Fatalf("a write in the view mounted again: %v; want it writable", err)
	}
	if stale, _ := filepath.Glob(filepath.Join(r.Dir, "work.stale-*")); len(stale) != 1 {
		t.Errorf("work directories moved aside: %v; want one", stale)
	}
	if err := b.Deactivate(ctx, r); err != nil {
		t.Fatal(err)
	}
	if stale, _ := filepath.Glob(filepath.Join(r.Dir, "work*")); len(stale) != 0 {
		t.Errorf("left after Deactivate: %v", stale)
	}
}
