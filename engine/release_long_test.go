//go:build linux

package engine

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine/internal/loopfs"
	"golang.org/x/sys/unix"
)

// longChain opens, making it, a chain of 23 directories of 200-byte names
// below root, about 4.6 KB: longer than PATH_MAX, which no single system
// call takes. It passes no path longer than a name to the kernel.
func longChain(t *testing.T, root string) int {
	t.Helper()
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 23 {
		n := fmt.Sprintf("d%02d", i) + strings.Repeat("x", 197)
		if err := unix.Mkdirat(fd, n, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			t.Fatal(err)
		}
		next, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	return fd
}

// writeLong writes files (name to content; "" removes) at the bottom of
// root's long chain.
func writeLong(t *testing.T, root string, files map[string]string) {
	t.Helper()
	fd := longChain(t, root)
	defer unix.Close(fd)
	for n, c := range files {
		if c == "" {
			if err := unix.Unlinkat(fd, n, 0); err != nil {
				t.Fatal(err)
			}
			continue
		}
		f, err := unix.Openat(fd, n, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		_, err = unix.Write(f, []byte(c))
		unix.Close(f)
		if err != nil {
			t.Fatal(err)
		}
	}
}

// longFixture is an overlay workspace whose source holds files below a
// path longer than PATH_MAX in a layer (sealed by a fork) and changes
// them in its own delta: one changed, one added, one deleted (a whiteout
// at that depth), so release applies entries and restores directory times
// there, and its journal names those paths.
func longFixture(t *testing.T, home, path string) *fixture {
	t.Helper()
	if unix.Geteuid() != 0 {
		t.Skip("requires root: the overlay backend mounts")
	}
	f := newFixtureAt(t, "overlay", home, path)
	writeLong(t, f.path, map[string]string{"leaf.txt": "one\n", "gone.txt": "bye\n"})
	f.fork(1)
	writeLong(t, f.path, map[string]string{"leaf.txt": "two\n", "new.txt": "new\n", "gone.txt": ""})
	return f
}

// TestRelease_SIGKILLLongPaths is TestRelease_SIGKILL on longFixture:
// every step of a release of files below a path longer than PATH_MAX is
// finished or undone by the next command (release failed with "file name
// too long" before it began).
func TestRelease_SIGKILLLongPaths(t *testing.T) {
	testReleaseKillsOf(t, func(t *testing.T) (string, string) { return t.TempDir(), filepath.Join(t.TempDir(), "ws") }, longFixture)
}

// TestRelease_SIGKILLLongPathsAcrossFilesystems is the same with the state
// directory and the workspace on two filesystems, where release stages a
// copy of the view and verifies it.
func TestRelease_SIGKILLLongPathsAcrossFilesystems(t *testing.T) {
	testReleaseKillsOf(t, func(t *testing.T) (string, string) {
		return loopfs.Mount(t, "ext4"), filepath.Join(loopfs.Mount(t, "ext4"), "ws")
	}, longFixture)
}
