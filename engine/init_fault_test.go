//go:build linux

package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/loopfs"
	"github.com/tinehq/tine/internal/mnt"
)

// initFiles is what the init fault tests take under management.
var initFiles = map[string]string{
	"a.txt": "alpha\n", "dir/b.txt": "beta\n", "dir/sub/c.txt": "gamma\n",
	"e/f.txt": "f\n", "g.txt": "g\n", "h/i/j.txt": "j\n",
}

// TestInit_SIGKILLAcrossFilesystems kills an init whose state directory is
// on another filesystem than the directory (so it copies) at each step:
// the next command leaves the directory's files all there, either as plain
// files (the init undone) or as a workspace whose view shows them. It used
// to leave part of the files, let a second init take that part, and
// unmount the new workspace on every later sweep.
func TestInit_SIGKILLAcrossFilesystems(t *testing.T) {
	testInitKills(t, func(t *testing.T) (string, string) {
		return loopfs.Mount(t, "ext4"), filepath.Join(loopfs.Mount(t, "ext4"), "ws")
	})
}

// TestInit_SIGKILL is TestInit_SIGKILLAcrossFilesystems on one filesystem,
// where init renames.
func TestInit_SIGKILL(t *testing.T) {
	testInitKills(t, func(t *testing.T) (string, string) { return t.TempDir(), filepath.Join(t.TempDir(), "ws") })
}

func testInitKills(t *testing.T, dirs func(*testing.T) (string, string)) {
	if os.Geteuid() != 0 {
		t.Skip("requires root: the overlay backend mounts")
	}
	for n := 0; ; n++ {
		if n > 100 {
			t.Fatal("init still killed after 100 steps")
		}
		done := false
		t.Run(fmt.Sprintf("step%03d", n), func(t *testing.T) {
			home, path := dirs(t)
			writeFiles(t, path, initFiles)
			want := manifest(t, path)
			t.Cleanup(func() { mnt.UnmountAll(path) })
			killed := killedAt(t, "init", home, path, n)
			f := &fixture{t: t, ctx: t.Context(), home: home, path: path}
			f.open() // the next command: sweeps
			defer f.e.Close()
			if d := cmp.Diff(want, manifest(t, path)); d != "" {
				t.Fatalf("step %d (killed %v): files differ after the next command (-want +got):\n%s", n, killed, d)
			}
			w, err := f.e.FindWorkspace(f.ctx, path)
			if !killed {
				done = true
				if err != nil {
					t.Fatalf("init without a kill: %v", err)
				}
			} else if errors.Is(err, tine.ErrNotFound) {
				if left := names(filepath.Join(home, "workspaces")); len(left) != 0 {
					t.Errorf("step %d: init undone, but state left: %v", n, left)
				}
				// The retry succeeds, and later commands leave it mounted.
				if _, err := f.e.Init(f.ctx, InitOptions{Path: path, Backend: "overlay"}); err != nil {
					t.Fatalf("step %d: init again: %v", n, err)
				}
				f.reopen()
				if ok, _ := mnt.IsMountpoint(path); !ok {
					t.Fatalf("step %d: the next command unmounted the new workspace", n)
				}
				if d := cmp.Diff(want, manifest(t, path)); d != "" {
					t.Fatalf("step %d: the new workspace's view differs (-want +got):\n%s", n, d)
				}
			} else if err != nil {
				t.Fatal(err)
			} else {
				t.Logf("step %d: init complete as workspace %s", n, w.Name)
			}
			if _, err := f.e.Release(f.ctx, path, true); err != nil {
				t.Fatalf("step %d: release: %v", n, err)
			}
			if d := cmp.Diff(want, manifest(t, path)); d != "" {
				t.Fatalf("step %d: released files differ (-want +got):\n%s", n, d)
			}
		})
		if done || t.Failed() {
			t.Logf("init has %d fault points", n)
			return
		}
	}
}

// TestInit_FullDisk: the state directory's filesystem is too small for
// the directory's files. Init fails with a clean error, the directory is
// exactly as it was, and no state is left.
func TestInit_FullDisk(t *testing.T) {
	home := smallFS(t, 64)
	path := filepath.Join(loopfs.Mount(t, "ext4"), "ws")
	files := map[string]string{"small.txt": "small\n"}
	for i := range 40 {
		files[fmt.Sprintf("big/%02d.bin", i)] = strings.Repeat(fmt.Sprintf("%02d", i), 1<<20)
	}
	writeFiles(t, path, files)
	want := manifest(t, path)
	t.Cleanup(func() { mnt.UnmountAll(path) })
	f := &fixture{t: t, ctx: t.Context(), home: home, path: path}
	f.open()
	defer f.e.Close()
	_, err := f.e.Init(f.ctx, InitOptions{Path: path, Backend: "overlay"})
	if err == nil {
		t.Fatal("init into a full filesystem succeeded")
	}
	t.Logf("init into a full filesystem: %v", err)
	if d := cmp.Diff(want, manifest(t, path)); d != "" {
		t.Fatalf("files differ after the failed init (-want +got):\n%s", d)
	}
	f.reopen()
	if d := cmp.Diff(want, manifest(t, path)); d != "" {
		t.Fatalf("files differ after the next command (-want +got):\n%s", d)
	}
	if left := names(filepath.Join(home, "workspaces")); len(left) != 0 {
		t.Errorf("state left: %v", left)
	}
}
