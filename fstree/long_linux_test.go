package fstree_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/layer"
	"golang.org/x/sys/unix"
)

// deepNames returns n directory names of 200 bytes: a chain of 24 makes a
// path of about 4.8 KB, past PATH_MAX (4096), which no single system call
// takes.
func deepNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("d%02d", i) + strings.Repeat("x", 197)
	}
	return out
}

// openChain opens root/names... one level at a time, as a run does with cd
// or openat, making the directories when mk is set, and returns the
// deepest directory's descriptor. It uses no path longer than a name, so
// it is independent of the code under test.
func openChain(t testing.TB, root string, names []string, mk bool) int {
	t.Helper()
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if mk {
			if err := unix.Mkdirat(fd, n, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				t.Fatal(err)
			}
		}
		next, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatalf("open level %s: %v", n[:3], err)
		}
		fd = next
	}
	return fd
}

// writeAt writes content to the file name in directory fd.
func writeAt(t *testing.T, fd int, name, content string) {
	t.Helper()
	f, err := unix.Openat(fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(f)
	if _, err := unix.Write(f, []byte(content)); err != nil {
		t.Fatal(err)
	}
}

// readNameAt returns the content of the file name in directory fd.
func readNameAt(t *testing.T, fd int, name string) string {
	t.Helper()
	f, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	defer unix.Close(f)
	b := make([]byte, 4096)
	n, err := unix.Read(f, b)
	if err != nil {
		t.Fatal(err)
	}
	return string(b[:n])
}

// statAt returns the lstat of name in directory fd.
func statAt(t *testing.T, fd int, name string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.Fatalf("stat %s: %v", name, err)
	}
	return st
}

// buildDeep makes, at the bottom of a chain of names below root, a file
// with an extended attribute and exact times, a symlink to it, a hard
// link of it, a fifo and a directory of mode 0750, and returns the
// chain's path relative to root.
func buildDeep(t *testing.T, root string, names []string) string {
	t.Helper()
	fd := openChain(t, root, names, true)
	defer unix.Close(fd)
	writeAt(t, fd, "leaf.txt", "deep\n")
	must(t, unix.Symlinkat("leaf.txt", fd, "ln"))
	must(t, unix.Linkat(fd, "leaf.txt", fd, "hl", 0))
	must(t, unix.Mkfifoat(fd, "pipe", 0o600))
	must(t, unix.Mkdirat(fd, "sub", 0o750))
	must(t, unix.Fchmodat(fd, "sub", 0o750, 0))
	ts := []unix.Timespec{unix.NsecToTimespec(stamp.UnixNano()), unix.NsecToTimespec(stamp.UnixNano())}
	must(t, unix.UtimesNanoAt(fd, "leaf.txt", ts, unix.AT_SYMLINK_NOFOLLOW))
	if err := unix.Lsetxattr(fmt.Sprintf("/proc/self/fd/%d/leaf.txt", fd), "user.tine", []byte("kept"), 0); err != nil && !errors.Is(err, unix.ENOTSUP) {
		t.Fatal(err)
	}
	return filepath.Join(names...)
}

// checkDeep fails t unless the chain of names below root holds what
// buildDeep made.
func checkDeep(t *testing.T, root string, names []string) {
	t.Helper()
	fd := openChain(t, root, names, false)
	defer unix.Close(fd)
	if got := readNameAt(t, fd, "leaf.txt"); got != "deep\n" {
		t.Errorf("leaf.txt = %q", got)
	}
	leaf := statAt(t, fd, "leaf.txt")
	if got := time.Unix(leaf.Mtim.Unix()); !got.Equal(stamp) {
		t.Errorf("leaf.txt mtime %v, want %v", got, stamp)
	}
	if hl := statAt(t, fd, "hl"); hl.Ino != leaf.Ino {
		t.Errorf("hl is not a hard link of leaf.txt any more")
	}
	b := make([]byte, 64)
	if n, err := unix.Readlinkat(fd, "ln", b); err != nil || string(b[:n]) != "leaf.txt" {
		t.Errorf("ln -> %q, %v", b[:max(n, 0)], err)
	}
	if st := statAt(t, fd, "pipe"); st.Mode&unix.S_IFMT != unix.S_IFIFO {
		t.Errorf("pipe has mode %o", st.Mode)
	}
	if st := statAt(t, fd, "sub"); st.Mode&0o7777 != 0o750 {
		t.Errorf("sub has mode %o, want 750", st.Mode&0o7777)
	}
	val := make([]byte, 16)
	n, err := unix.Lgetxattr(fmt.Sprintf("/proc/self/fd/%d/leaf.txt", fd), "user.tine", val)
	if err == nil && string(val[:n]) != "kept" || err != nil && !errors.Is(err, unix.ENOTSUP) {
		t.Errorf("user.tine = %q, %v", val[:max(n, 0)], err)
	}
}

// TestLongPaths: a tree whose paths are longer than PATH_MAX is copied,
// compared, walked, measured and removed whole; each of these failed with
// "file name too long" on the first path past the limit.
func TestLongPaths(t *testing.T) {
	ctx := context.Background()
	names := deepNames(24)
	src, dst := t.TempDir(), t.TempDir()
	rel := buildDeep(t, src, names)
	if len(filepath.Join(src, rel)) < unix.PathMax {
		t.Fatalf("test tree too shallow: %d bytes", len(filepath.Join(src, rel)))
	}
	must(t, os.WriteFile(filepath.Join(src, "top.txt"), []byte("top\n"), 0o644))

	must(t, fstree.Copy(ctx, src, dst, fstree.CopyOptions{}))
	checkDeep(t, dst, names)

	t.Run("Diff", func(t *testing.T) {
		changes, err := fstree.Diff(ctx, src, dst)
		must(t, err)
		if len(changes) != 0 {
			t.Fatalf("a copy differs: %v", changes)
		}
		fd := openChain(t, dst, names, false)
		writeAt(t, fd, "leaf.txt", "changed\n")
		unix.Close(fd)
		changes, err = fstree.Diff(ctx, src, dst)
		must(t, err)
		var got []string
		for _, c := range changes {
			if !strings.HasPrefix(c.Path, filepath.ToSlash(rel)+"/") || c.Kind != layer.Modified {
				t.Errorf("unexpected change %s of %.40s...", c.Kind, c.Path)
			}
			got = append(got, filepath.Base(c.Path))
		}
		if strings.Join(got, " ") != "hl leaf.txt" {
			t.Errorf("Diff changed %q at the bottom, want hl and leaf.txt (one file, two links)", got)
		}
	})
	t.Run("SamePath", func(t *testing.T) {
		same, err := fstree.SamePath(filepath.Join(src, rel, "ln"), filepath.Join(dst, rel, "ln"))
		if err != nil || !same {
			t.Errorf("SamePath of the deep symlinks = %v, %v", same, err)
		}
	})
	t.Run("WalkDiskUsage", func(t *testing.T) {
		var n int
		must(t, fstree.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if _, err := d.Info(); err != nil {
				return err
			}
			n++
			return nil
		}))
		if want := 1 + 1 + len(names) + 5; n != want {
			t.Errorf("WalkDir visited %d entries, want %d", n, want)
		}
		got, err := fstree.DiskUsage(src)
		if err != nil || got != int64(len("deep\n")+len("top\n")) {
			t.Errorf("DiskUsage = %d, %v", got, err)
		}
	})
	t.Run("Primitives", func(t *testing.T) {
		p := filepath.Join(src, rel, "leaf.txt")
		if fi, err := fstree.Lstat(p); err != nil || fi.Size() != 5 || fi.Sys().(*syscall.Stat_t).Nlink != 2 {
			t.Errorf("Lstat = %v, %v", fi, err)
		}
		if b, err := fstree.ReadFile(p); err != nil || string(b) != "deep\n" {
			t.Errorf("ReadFile = %q, %v", b, err)
		}
		if target, err := fstree.Readlink(filepath.Join(src, rel, "ln")); err != nil || target != "leaf.txt" {
			t.Errorf("Readlink = %q, %v", target, err)
		}
		if _, err := fstree.Lstat(filepath.Join(src, rel, "absent")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Lstat of an absent deep path: %v, want ErrNotExist", err)
		}
		if v, err := fstree.Lgetxattr(p, "user.tine"); err == nil && string(v) != "kept" {
			t.Errorf("Lgetxattr = %q", v)
		}
	})
	t.Run("RemoveAll", func(t *testing.T) {
		must(t, fstree.RemoveAll(filepath.Join(dst, rel, "sub")))
		if _, err := fstree.Lstat(filepath.Join(dst, rel, "sub")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("deep sub still there: %v", err)
		}
		must(t, fstree.RemoveAll(filepath.Join(dst, names[0])))
		if left, _ := os.ReadDir(dst); len(left) != 1 {
			t.Errorf("left after RemoveAll: %v", left)
		}
	})
}

// longTree makes smallTree's n files below a chain of deepNames(24) in
// root: made at a short path, then renamed to the bottom by descriptor.
func longTree(b *testing.B, root string, n int) {
	b.Helper()
	tmp := filepath.Join(b.TempDir(), "flat")
	must(b, os.Mkdir(tmp, 0o755))
	smallTree(b, tmp, n)
	fd := openChain(b, root, deepNames(24), true)
	defer unix.Close(fd)
	ents, err := os.ReadDir(tmp)
	must(b, err)
	for _, e := range ents {
		must(b, unix.Renameat(unix.AT_FDCWD, filepath.Join(tmp, e.Name()), fd, e.Name()))
	}
}

// BenchmarkCopyLong is BenchmarkCopy with the 2,000 files below a path
// longer than PATH_MAX, where every call resolves its path chunk by chunk.
func BenchmarkCopyLong(b *testing.B) {
	src := filepath.Join(b.TempDir(), "src")
	must(b, os.Mkdir(src, 0o755))
	longTree(b, src, 2000)
	work := filepath.Join(filepath.Dir(src), "bench-dst")
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		must(b, fstree.RemoveAll(work))
		must(b, os.Mkdir(work, 0o755))
		b.StartTimer()
		must(b, fstree.Copy(context.Background(), src, work, fstree.CopyOptions{}))
	}
}

// BenchmarkDiffLong is BenchmarkDiff with the files below a path longer
// than PATH_MAX.
func BenchmarkDiffLong(b *testing.B) {
	base, view := filepath.Join(b.TempDir(), "base"), filepath.Join(b.TempDir(), "view")
	must(b, os.Mkdir(base, 0o755))
	must(b, os.Mkdir(view, 0o755))
	longTree(b, base, 2000)
	must(b, fstree.Copy(context.Background(), base, view, fstree.CopyOptions{}))
	b.ResetTimer()
	for range b.N {
		if _, err := fstree.Diff(context.Background(), base, view); err != nil {
			b.Fatal(err)
		}
	}
}
