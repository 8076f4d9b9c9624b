package btrfs_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/loopfs"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/layer/btrfs"
	"github.com/tinehq/tine/layer/layertest"
)

func TestBackend(t *testing.T) {
	layertest.Run(t, func(*testing.T) layer.Backend { return btrfs.New() },
		layertest.WithRoot(func(t *testing.T) string { return loopfs.Mount(t, "btrfs") }))
}

func TestBackend_Name(t *testing.T) {
	if got := btrfs.New().Name(); got != "btrfs" {
		t.Errorf("Name = %q, want btrfs", got)
	}
}

func TestProbe(t *testing.T) {
	dir := loopfs.Mount(t, "btrfs")
	if err := btrfs.Probe(dir); err != nil {
		t.Fatalf("Probe on btrfs: %v", err)
	}
	if names, _ := os.ReadDir(dir); len(names) != 0 {
		t.Errorf("Probe left %v behind", names)
	}
}

func TestProbe_Unsupported(t *testing.T) {
	for name, dir := range map[string]func(t *testing.T) string{
		"xfs":     func(t *testing.T) string { return loopfs.Mount(t, "xfs") },
		"TempDir": func(t *testing.T) string { return t.TempDir() },
	} {
		t.Run(name, func(t *testing.T) {
			err := btrfs.Probe(dir(t))
			if !errors.Is(err, tine.ErrUnsupported) {
				t.Fatalf("got %v, want ErrUnsupported", err)
			}
			t.Log(err)
		})
	}
}

// fixture is a btrfs mount with a workspace directory holding one file.
type fixture struct {
	ctx  context.Context
	b    *btrfs.Backend
	root string
	ws   string
}

// newFixture mounts a btrfs and fills root/ws.
func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{ctx: context.Background(), b: btrfs.New(), root: loopfs.Mount(t, "btrfs")}
	f.ws = f.path("ws")
	must(t, os.Mkdir(f.ws, 0o755))
	must(t, os.WriteFile(filepath.Join(f.ws, "a"), []byte("a"), 0o644))
	return f
}

// path returns name under the fixture's mount.
func (f *fixture) path(name string) string { return filepath.Join(f.root, name) }

// run returns a run whose view is under the mount.
func (f *fixture) run(t *testing.T, id string) layer.Run {
	t.Helper()
	dir := f.path(id + ".dir")
	must(t, os.Mkdir(dir, 0o700))
	return layer.Run{ID: id, Dir: dir, View: f.path(id + ".view")}
}

// isSubvolume reports whether path is a subvolume root (inode 256).
func isSubvolume(t *testing.T, path string) bool {
	t.Helper()
	fi, err := os.Lstat(path)
	must(t, err)
	return fi.Sys().(*syscall.Stat_t).Ino == 256
}

// checkReadOnly fails t unless writing into dir fails with EROFS.
func checkReadOnly(t *testing.T, dir string) {
	t.Helper()
	err := os.WriteFile(filepath.Join(dir, "new"), nil, 0o644)
	if !errors.Is(err, syscall.EROFS) {
		t.Errorf("write into layer %s: got %v, want EROFS", dir, err)
	}
}

func TestBackend_Subvolumes(t *testing.T) {
	f := newFixture(t)
	l0, l1 := f.path("l0"), f.path("l1")
	must(t, f.b.Import(f.ctx, f.ws, l0, false))
	if !isSubvolume(t, l0) {
		t.Fatal("imported layer is not a subvolume")
	}
	checkReadOnly(t, l0)
	r := f.run(t, "r")
	must(t, f.b.Activate(f.ctx, r, []string{l0}))
	if !isSubvolume(t, r.View) {
		t.Fatal("view is not a subvolume")
	}
	must(t, os.WriteFile(filepath.Join(r.View, "b"), []byte("b"), 0o644))
	got, err := f.b.Seal(f.ctx, r, []string{l0}, l1)
	must(t, err)
	if len(got) != 1 || got[0] != l1 || !isSubvolume(t, l1) {
		t.Fatalf("Seal = %v, want [%s] as a subvolume", got, l1)
	}
	checkReadOnly(t, l1)
	must(t, f.b.Deactivate(f.ctx, r))
	for _, l := range []string{l0, l1, l0} {
		must(t, f.b.RemoveLayer(f.ctx, l))
	}
	if names, _ := os.ReadDir(f.root); len(names) != 2 { // ws and r.dir
		t.Errorf("left behind: %v", names)
	}
}

func TestBackend_SealPlainSource(t *testing.T) {
	f := newFixture(t)
	src := layer.Run{ID: "src", Dir: f.path("src.dir"), View: f.ws}
	must(t, os.Mkdir(src.Dir, 0o700))
	l := f.path("l")
	got, err := f.b.Seal(f.ctx, src, nil, l)
	must(t, err)
	if len(got) != 1 || !isSubvolume(t, l) {
		t.Fatalf("Seal of a plain dir = %v, want one subvolume", got)
	}
	checkReadOnly(t, l)
	if b, err := os.ReadFile(filepath.Join(l, "a")); err != nil || string(b) != "a" {
		t.Errorf("layer/a = %q, %v", b, err)
	}
	must(t, f.b.Deactivate(f.ctx, src))
	if _, err := os.Lstat(f.ws); !os.IsNotExist(err) {
		t.Errorf("workspace view still there: %v", err)
	}
}

func TestBackend_ImportAcrossFilesystems(t *testing.T) {
	f := newFixture(t)
	ws := t.TempDir()
	must(t, os.WriteFile(filepath.Join(ws, "x"), []byte("x"), 0o644))
	l := f.path("l")
	must(t, f.b.Import(f.ctx, ws, l, true))
	if b, err := os.ReadFile(filepath.Join(l, "x")); err != nil || string(b) != "x" {
		t.Errorf("layer/x = %q, %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(ws, "x")); err != nil {
		t.Errorf("Import moved the workspace's file: %v", err)
	}
}

func TestBackend_DeactivateMissing(t *testing.T) {
	b := btrfs.New()
	r := layer.Run{ID: "r", Dir: t.TempDir(), View: filepath.Join(t.TempDir(), "none")}
	must(t, b.Deactivate(context.Background(), r))
	must(t, b.RemoveLayer(context.Background(), filepath.Join(t.TempDir(), "none")))
}

func TestBackend_NotFlat(t *testing.T) {
	b := btrfs.New()
	r := layer.Run{ID: "r", Dir: t.TempDir(), View: filepath.Join(t.TempDir(), "v")}
	err := b.Activate(context.Background(), r, []string{"a", "b"})
	if !errors.Is(err, tine.ErrInvalid) {
		t.Fatalf("got %v, want ErrInvalid", err)
	}
}

// must fails t on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
