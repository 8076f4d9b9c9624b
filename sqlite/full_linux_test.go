package sqlite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tinehq/tine/internal/testkit"
	"golang.org/x/sys/unix"
)

// With no inode left on its disk, opening the store says the disk is full
// (and wraps ENOSPC), not SQLite's "unable to open database file (14)".
func TestOpen_DiskFullSaysSo(t *testing.T) {
	testkit.RequireRoot(t, "mounts a small tmpfs")
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=8m,nr_inodes=64"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	path := filepath.Join(dir, "tine.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for i := 0; ; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d", i)), nil, 0o600); err != nil {
			break
		}
	}
	_, err = Open(path)
	if err == nil || !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "is full (no inode left)") {
		t.Fatalf("Open on a disk with no inode left = %v, want one that says the disk is full", err)
	}
}
