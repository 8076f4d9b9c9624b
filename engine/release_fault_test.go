//go:build linux

package engine

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/loopfs"
	"github.com/tinehq/tine/internal/mnt"
)

// Environment of the helper process that runs one engine operation with
// TINE_TEST_KILL_AT set, and so SIGKILLs itself at a step of it.
const (
	faultHelperEnv = "TINE_ENGINE_FAULT_HELPER" // "release" or "init"
	faultHomeEnv   = "TINE_ENGINE_FAULT_HOME"
	faultPathEnv   = "TINE_ENGINE_FAULT_PATH"
)

// TestFaultHelperProcess is not a test: re-executed by the fault tests, it
// opens the engine (sweeping, as every command does) and releases or inits
// the workspace, dying at the step TINE_TEST_KILL_AT names.
func TestFaultHelperProcess(t *testing.T) {
	op := os.Getenv(faultHelperEnv)
	if op == "" {
		t.Skip("helper process for the fault tests")
	}
	ctx := context.Background()
	e, err := Open(ctx, os.Getenv(faultHomeEnv), testOptions()...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(3)
	}
	switch op {
	case "release":
		_, err = e.Release(ctx, os.Getenv(faultPathEnv), true)
	case "init":
		_, err = e.Init(ctx, InitOptions{Path: os.Getenv(faultPathEnv), Backend: "overlay"})
	}
	e.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, op+":", err)
		os.Exit(4)
	}
	os.Exit(0)
}

// killedAt runs op in a helper process that dies at fault point n. It
// reports whether the helper was killed (false: op finished first).
func killedAt(t *testing.T, op, home, path string, n int) bool {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFaultHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), faultHelperEnv+"="+op, faultHomeEnv+"="+home, faultPathEnv+"="+path,
		fmt.Sprintf("TINE_TEST_KILL_AT=%s:%d", op, n))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true
		}
	}
	if err != nil {
		t.Fatalf("%s helper at step %d: %v\n%s", op, n, err, out)
	}
	return false
}

// manifest describes a tree for comparison: per path its type, permission
// bits, and content digest, symlink target or device.
func manifest(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := fstree.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v", fi.Mode())
		switch {
		case fi.Mode().IsRegular():
			b, err := fstree.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %x", sha256.Sum256(b))
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := fstree.Readlink(p)
			desc += " -> " + l
		}
		if rel != "." && !strings.HasPrefix(rel, ".tine-") {
			out[rel] = desc
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// layeredFixture is a workspace whose source has two layers above its base
// and a delta of its own, with every kind of change release must apply: a
// new file, a changed one, a deletion (whiteout), a directory deleted and
// made again (opaque), a file turned into a directory and a directory into
// a file, a symlink, a mode change, a new nested directory.
func layeredFixture(t *testing.T, home, path string) *fixture {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("requires root: the overlay backend mounts")
	}
	writeFiles(t, path, map[string]string{
		"keep/one.txt": "one\n", "keep/deep/two.txt": "two\n", "gone/x.txt": "x\n",
		"redo/old.txt": "old\n", "f2d": "file\n", "d2f/in.txt": "in\n", "mode.sh": "#!/bin/sh\n",
	})
	f := newFixtureAt(t, "overlay", home, path)
	ws := f.path
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Layer 1 (sealed by a fork).
	writeFiles(t, ws, map[string]string{"new/a/b/c.txt": "new\n", "a.txt": "alpha changed\n"})
	must(os.RemoveAll(filepath.Join(ws, "gone")))
	f.fork(1)
	// Layer 2 (a checkpoint).
	must(os.RemoveAll(filepath.Join(ws, "redo")))
	writeFiles(t, ws, map[string]string{"redo/new.txt": "redone\n"})
	must(os.Remove(filepath.Join(ws, "f2d")))
	writeFiles(t, ws, map[string]string{"f2d/inside.txt": "now a dir\n"})
	if _, err := f.e.Checkpoint(f.ctx, f.ref.Run.ID, "two"); err != nil {
		t.Fatal(err)
	}
	// The source's own delta.
	must(os.RemoveAll(filepath.Join(ws, "d2f")))
	must(os.WriteFile(filepath.Join(ws, "d2f"), []byte("now a file\n"), 0o600))
	must(os.Symlink("keep/one.txt", filepath.Join(ws, "link")))
	must(os.Chmod(filepath.Join(ws, "mode.sh"), 0o755))
	must(os.Remove(filepath.Join(ws, "keep/deep/two.txt")))
	writeFiles(t, ws, map[string]string{"keep/three.txt": "three\n", "new/a/b/c.txt": "newer\n"})
	return f
}

// checkAfterKill checks what a kill at step n and the next command left:
// the user's files exactly as the view showed them, either released or
// still a workspace whose view shows them, with the store agreeing; and
// then that a release succeeds.
func checkAfterKill(t *testing.T, f *fixture, want map[string]string, n int) {
	t.Helper()
	f.open() // the next command: sweeps
	w, err := f.e.FindWorkspace(f.ctx, f.path)
	switch {
	case errors.Is(err, tine.ErrNotFound):
		if ok, _ := mnt.IsMountpoint(f.path); ok {
			t.Errorf("step %d: released, but %s is still mounted", n, f.path)
		}
		if d := cmp.Diff(want, manifest(t, f.path)); d != "" {
			t.Fatalf("step %d: released files differ from the view (-want +got):\n%s", n, d)
		}
		if left := names(filepath.Join(f.home, "workspaces")); len(left) != 0 {
			t.Errorf("step %d: state left after the release: %v", n, left)
		}
		// Whatever the kill left in the trash, tine gc deletes, and the
		// user's files stay as they were.
		checkTrashEmptied(t, f, fmt.Sprintf("step %d", n))
		if d := cmp.Diff(want, manifest(t, f.path)); d != "" {
			t.Fatalf("step %d: released files changed by tine gc (-want +got):\n%s", n, d)
		}
		return
	case err != nil:
		t.Fatalf("step %d: %v", n, err)
	}
	if d := cmp.Diff(want, manifest(t, f.path)); d != "" {
		t.Fatalf("step %d: still workspace %s, but its view differs (-want +got):\n%s", n, w.Name, d)
	}
	if _, err := f.e.Release(f.ctx, f.path, true); err != nil {
		t.Fatalf("step %d: retried release: %v", n, err)
	}
	if d := cmp.Diff(want, manifest(t, f.path)); d != "" {
		t.Fatalf("step %d: files after the retried release differ (-want +got):\n%s", n, d)
	}
}

// TestRelease_SIGKILL kills a release (same filesystem: by renaming) at
// each of its steps in turn; the next command finishes or undoes it.
func TestRelease_SIGKILL(t *testing.T) {
	testReleaseKills(t, func(t *testing.T) (string, string) { return t.TempDir(), filepath.Join(t.TempDir(), "ws") })
}

// TestRelease_SIGKILLAcrossFilesystems is TestRelease_SIGKILL with the
// state directory and the workspace on two loop filesystems, where release
// stages a verified copy: a release killed there used to be "finished"
// with an empty view, deleting every layer.
func TestRelease_SIGKILLAcrossFilesystems(t *testing.T) {
	testReleaseKills(t, func(t *testing.T) (string, string) {
		return loopfs.Mount(t, "ext4"), filepath.Join(loopfs.Mount(t, "ext4"), "ws")
	})
}

func testReleaseKills(t *testing.T, dirs func(*testing.T) (home, path string)) {
	testReleaseKillsOf(t, dirs, layeredFixture)
}

// testReleaseKillsOf kills a release of the workspace mk makes, in dirs,
// at each of its steps in turn; the next command finishes or undoes it.
func testReleaseKillsOf(t *testing.T, dirs func(*testing.T) (home, path string), mk func(t *testing.T, home, path string) *fixture) {
	if os.Geteuid() != 0 {
		t.Skip("requires root: the overlay backend mounts")
	}
	for n := 0; ; n++ {
		if n > 200 {
			t.Fatal("release still killed after 200 steps")
		}
		done := false
		t.Run(fmt.Sprintf("step%03d", n), func(t *testing.T) {
			home, path := dirs(t)
			f := mk(t, home, path)
			want := manifest(t, f.path)
			f.e.Close()
			if !killedAt(t, "release", f.home, f.path, n) {
				done = true
				f.open()
				if d := cmp.Diff(want, manifest(t, f.path)); d != "" {
					t.Fatalf("release without a kill: files differ (-want +got):\n%s", d)
				}
				// The release returned before deleting: its state is in
				// the trash, for the daemon or tine gc.
				if left := trashNames(f.home); len(left) != 1 {
					t.Errorf("release without a kill: the trash holds %v, want the workspace's state", left)
				}
				checkTrashEmptied(t, f, "release without a kill")
				return
			}
			checkAfterKill(t, f, want, n)
		})
		if done || t.Failed() {
			t.Logf("release has %d fault points", n)
			return
		}
	}
}

// smallFS mounts a fresh ext4 filesystem of mb MiB (as root; skips
// otherwise) and returns its directory.
func smallFS(t *testing.T, mb int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("requires root: loop mounts")
	}
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		t.Skip("mkfs.ext4 not found")
	}
	img := filepath.Join(t.TempDir(), "small.img")
	dir := t.TempDir()
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, int64(mb)<<20); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][]string{{"mkfs.ext4", "-q", "-F", "-m", "0", img}, {"mount", "-o", "loop", img, dir}} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Skipf("%v: %v: %s", c, err, out)
		}
	}
	t.Cleanup(func() {
		mnt.UnmountAll(filepath.Join(dir, "ws"))
		if exec.Command("umount", dir).Run() != nil {
			exec.Command("umount", "-l", dir).Run()
		}
	})
	return dir
}

// fill writes a file of zeros at p until its filesystem has about keep
// bytes left.
func fill(t *testing.T, p string, keep int64) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(filepath.Dir(p), &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * st.Bsize
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = 1
	}
	for left := free - keep; left > 0; left -= int64(len(buf)) {
		if _, err := f.Write(buf[:min(int64(len(buf)), left)]); err != nil {
			break
		}
	}
	f.Sync()
}

// TestRelease_FullDiskThenRetry: the workspace's filesystem is too full for
// its files to come back (the state directory is on another, so release
// must copy). The release fails cleanly, the workspace stays as it was, and
// after space is freed the forced retry releases every file. It used to
// fail half-way, and the retry then replaced the complete staged copy with
// a copy of the unmounted (empty) view and deleted every layer.
func TestRelease_FullDiskThenRetry(t *testing.T) {
	small := smallFS(t, 64)
	home := loopfs.Mount(t, "ext4")
	path := filepath.Join(small, "ws")
	files := map[string]string{}
	for i := range 24 {
		files[fmt.Sprintf("big/%02d.bin", i)] = strings.Repeat(fmt.Sprintf("%02d", i), 1<<20) // 2 MiB each
	}
	writeFiles(t, path, files)
	f := newFixtureAt(t, "overlay", home, path)
	writeFiles(t, f.path, map[string]string{"delta.txt": "written in the workspace\n"})
	want := manifest(t, f.path)
	filler := filepath.Join(small, "filler")
	fill(t, filler, 16<<20)
	if _, err := f.e.Release(f.ctx, f.path, true); err == nil {
		t.Fatal("release onto a full filesystem succeeded")
	} else {
		t.Logf("release onto a full filesystem: %v", err)
	}
	if _, err := f.e.FindWorkspace(f.ctx, f.path); err != nil {
		t.Fatalf("after the failed release: %v", err)
	}
	if d := cmp.Diff(want, manifest(t, f.path)); d != "" {
		t.Fatalf("after the failed release the view differs (-want +got):\n%s", d)
	}
	f.reopen() // the next command sweeps
	if d := cmp.Diff(want, manifest(t, f.path)); d != "" {
		t.Fatalf("after the next command the view differs (-want +got):\n%s", d)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Release(f.ctx, f.path, true); err != nil {
		t.Fatalf("retried release: %v", err)
	}
	if d := cmp.Diff(want, manifest(t, f.path)); d != "" {
		t.Fatalf("released files differ (-want +got):\n%s", d)
	}
	if left := names(filepath.Join(home, "workspaces")); len(left) != 0 {
		t.Errorf("state left after the release: %v", left)
	}
}

// TestRelease_BitForBit: the released tree of the layered fixture has the
// view's modes, owners, times of files and directories, and symlinks.
func TestRelease_BitForBit(t *testing.T) {
	f := layeredFixture(t, t.TempDir(), filepath.Join(t.TempDir(), "ws"))
	want := fullManifest(t, f.path)
	if _, err := f.e.Release(f.ctx, f.path, true); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, fullManifest(t, f.path)); d != "" {
		t.Errorf("released tree differs from the view (-want +got):\n%s", d)
	}
}

// fullManifest is manifest with owners, modification times and extended
// attributes.
func fullManifest(t *testing.T, root string) map[string]string {
	t.Helper()
	out := manifest(t, root)
	keys := make([]string, 0, len(out))
	for k := range out {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range append(keys, ".") {
		p := filepath.Join(root, k)
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		out[k] += fmt.Sprintf(" %d:%d %v", st.Uid, st.Gid, fi.ModTime().UnixNano())
		for _, x := range xattrNames(p) {
			v, _ := fstree.Lgetxattr(p, x)
			out[k] += fmt.Sprintf(" %s=%q", x, v)
		}
	}
	return out
}
