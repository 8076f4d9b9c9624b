//go:build linux

package engine

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// writeSparse creates p: 4 GiB apparent, 8 KiB of data at 0 and at 1 GiB.
// It reports whether the filesystem kept it sparse.
func writeSparse(t *testing.T, p string) bool {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, off := range []int64{0, 1 << 30} {
		if _, err := f.WriteAt(sparseData(off), off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(4 << 30); err != nil {
		t.Fatal(err)
	}
	return diskBytes(t, p) < 1<<30
}

// sparseData is what writeSparse puts at off.
func sparseData(off int64) []byte {
	return bytes.Repeat([]byte{byte(off>>30) + 'a'}, 8<<10)
}

// diskBytes returns the bytes p takes on disk (st_blocks).
func diskBytes(t *testing.T, p string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks * 512
}

// checkSparse fails t unless p is writeSparse's file, still sparse.
func checkSparse(t *testing.T, what, p string) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if fi.Size() != 4<<30 {
		t.Errorf("%s: size %d, want 4 GiB", what, fi.Size())
	}
	if n := diskBytes(t, p); n > 8<<20 {
		t.Errorf("%s: %d MiB on disk for 16 KiB of data: holes filled", what, n>>20)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, off := range []int64{0, 1 << 30} {
		got := make([]byte, 8<<10)
		if _, err := f.ReadAt(got, off); err != nil || !bytes.Equal(got, sparseData(off)) {
			t.Errorf("%s: data at %d differs (%v)", what, off, err)
		}
	}
}

// TestEngine_ReleaseSparse: a sparse file in the source stays sparse through
// a fork and through release, which copies the source's files out.
func TestEngine_ReleaseSparse(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be, func(t *testing.T) {
			f := newFixture(t, be)
			if !writeSparse(t, filepath.Join(f.path, "disk.img")) {
				t.Skip("the workspace's filesystem does not keep holes")
			}
			fork := f.fork(1).Forks[0]
			checkSparse(t, "fork", filepath.Join(f.view(fork), "disk.img"))
			if _, err := f.e.Release(f.ctx, f.path, true); err != nil {
				t.Fatal(err)
			}
			checkSparse(t, "released workspace", filepath.Join(f.path, "disk.img"))
		})
	}
}

// TestEngine_ReleasePinned: a workspace holding an immutable file and an
// append-only one (chattr +i, +a) below its top level inits, forks and
// releases with its files in place and no state left behind: release used
// to fail (exit 1) on the layer it could not remove, and leave it as an
// orphan every later command warned about.
func TestEngine_ReleasePinned(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("requires root: chattr +i needs CAP_LINUX_IMMUTABLE")
	}
	for _, be := range backends(t) {
		t.Run(be, func(t *testing.T) {
			home, path := t.TempDir(), filepath.Join(t.TempDir(), "ws")
			writeFiles(t, path, map[string]string{"etc/pinned.conf": "pinned\n", "etc/audit.log": "log\n"})
			for _, c := range [][]string{{"+i", "etc/pinned.conf"}, {"+a", "etc/audit.log"}} {
				if out, err := exec.Command("chattr", c[0], filepath.Join(path, c[1])).CombinedOutput(); err != nil {
					t.Skipf("chattr %s: %v: %s", c[0], err, out)
				}
			}
			t.Cleanup(func() { exec.Command("chattr", "-R", "-i", "-a", filepath.Dir(path), home).Run() })
			f := newFixtureAt(t, be, home, path)
			fork := f.fork(1).Forks[0]
			if got := readFile(t, filepath.Join(f.view(fork), "etc/pinned.conf")); got != "pinned\n" {
				t.Errorf("fork: pinned.conf = %q", got)
			}
			if _, err := f.e.Release(f.ctx, f.path, true); err != nil {
				t.Fatalf("Release: %v", err)
			}
			if got := readFile(t, filepath.Join(f.path, "etc/pinned.conf")); got != "pinned\n" {
				t.Errorf("released: pinned.conf = %q", got)
			}
			if n := names(filepath.Join(f.home, "workspaces")); len(n) != 0 {
				t.Errorf("state left behind after release: %v", n)
			}
		})
	}
}
