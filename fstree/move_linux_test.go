package fstree_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/tinehq/tine/fstree"
	"golang.org/x/sys/unix"
)

func TestMoveContents_EXDEV(t *testing.T) {
	var sfs, tfs unix.Statfs_t
	if unix.Statfs("/dev/shm", &sfs) != nil || sfs.Type != unix.TMPFS_MAGIC {
		t.Skip("no tmpfs at /dev/shm")
	}
	dst := t.TempDir()
	must(t, unix.Statfs(dst, &tfs))
	if tfs.Type == unix.TMPFS_MAGIC {
		t.Skip("the test temp dir is on tmpfs too")
	}
	src, err := os.MkdirTemp("/dev/shm", "fstree-test-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(src) })
	write(t, filepath.Join(src, "a"), "a", 0o644)
	write(t, filepath.Join(src, "b"), "b", 0o644)
	err = fstree.MoveContents(src, dst)
	if !errors.Is(err, syscall.EXDEV) {
		t.Fatalf("got %v, want EXDEV", err)
	}
	if n := names(t, src); len(n) != 2 {
		t.Errorf("src holds %v after EXDEV, want both entries", n)
	}
	if n := names(t, dst); len(n) != 0 {
		t.Errorf("dst holds %v after EXDEV, want nothing", n)
	}
}
