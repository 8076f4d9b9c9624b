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

// longChain opens (making it when mk is set) a chain of 23 directories of
// 200-byte names below root, about 4.6 KB: longer than PATH_MAX, which no
// single system call takes. It passes no path longer than a name to the
// kernel.
func longChain(t *testing.T, root string, mk bool) int {
	t.Helper()
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 23 {
		n := fmt.Sprintf("d%02d", i) + strings.Repeat("x", 197)
		if mk {
			if err := unix.Mkdirat(fd, n, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				t.Fatal(err)
			}
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
	fd := longChain(t, root, true)
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

// TestEngine_LongPaths: on every backend, a fork's files below a path
// longer than PATH_MAX are listed by Changes, merged into the source,
// carried by a fork of the fork, and released as plain files.
func TestEngine_LongPaths(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be, func(t *testing.T) {
			f := newFixture(t, be)
			fork := f.fork(1).Forks[0]
			writeLong(t, f.view(fork), map[string]string{"leaf.txt": "deep\n"})
			changes, err := f.e.Changes(f.ctx, f.run(fork.ID))
			if err != nil {
				t.Fatalf("Changes: %.300v", err)
			}
			if n := len(changes); n != 24 || !strings.HasSuffix(changes[n-1].Path, "/leaf.txt") {
				t.Errorf("Changes lists %d paths, want the 23 directories and leaf.txt", n)
			}
			again, err := f.e.Fork(f.ctx, fork.ID, ForkOptions{Copies: 1})
			if err != nil {
				t.Fatalf("Fork of the fork: %.300v", err)
			}
			requireLongLeaf(t, "the fork of the fork", f.view(again.Forks[0]), "deep\n")
			if _, err := f.e.Merge(f.ctx, fork.ID, MergeOptions{Scope: ScopeFilesystem}); err != nil {
				t.Fatalf("Merge: %.300v", err)
			}
			requireLongLeaf(t, "the source after the merge", f.path, "deep\n")
			if _, err := f.e.Release(f.ctx, f.path, true); err != nil {
				t.Fatalf("Release: %.300v", err)
			}
			requireLongLeaf(t, "the released workspace", f.path, "deep\n")
		})
	}
}

// requireLongLeaf fails t unless leaf.txt at the bottom of root's long
// chain holds want.
func requireLongLeaf(t *testing.T, what, root, want string) {
	t.Helper()
	fd := longChain(t, root, false)
	defer unix.Close(fd)
	f, err := unix.Openat(fd, "leaf.txt", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("%s: leaf.txt: %v", what, err)
	}
	defer unix.Close(f)
	b := make([]byte, 64)
	n, err := unix.Read(f, b)
	if err != nil || string(b[:n]) != want {
		t.Errorf("%s: leaf.txt = %q, %v; want %q", what, b[:max(n, 0)], err, want)
	}
}
