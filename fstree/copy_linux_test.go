package fstree_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/loopfs"
	"github.com/tinehq/tine/internal/testkit"
	"golang.org/x/sys/unix"
)

// requireRoot skips t unless it runs as root.
func TestCopy_Whiteout(t *testing.T) {
	testkit.RequireRoot(t, "mknod of a character device")
	src, dst := t.TempDir(), t.TempDir()
	must(t, unix.Mknod(filepath.Join(src, "gone"), unix.S_IFCHR, 0)) // whiteout: mode 0, device 0/0
	must(t, unix.Mknod(filepath.Join(src, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
	must(t, unix.Mknod(filepath.Join(src, "blk"), unix.S_IFBLK|0o600, int(unix.Mkdev(7, 200))))
	must(t, fstree.Copy(context.Background(), src, dst, fstree.CopyOptions{}))
	checkSameTree(t, src, dst)
	fi, err := os.Lstat(filepath.Join(dst, "gone"))
	must(t, err)
	if st := fi.Sys().(*syscall.Stat_t); fi.Mode()&fs.ModeCharDevice == 0 || st.Rdev != 0 {
		t.Errorf("whiteout copied as %v rdev %d, want char device 0/0", fi.Mode(), st.Rdev)
	}
}

func TestCopy_FifoAndSocket(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	must(t, unix.Mkfifo(filepath.Join(src, "pipe"), 0o640))
	closeSock, err := bindSocket(filepath.Join(src, "sock"))
	must(t, err)
	defer closeSock()
	must(t, fstree.Copy(context.Background(), src, dst, fstree.CopyOptions{}))
	checkSameTree(t, src, dst)
}

// bindSocket creates a unix socket file at p and returns its closer.
func bindSocket(p string) (func(), error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: p}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return func() { unix.Close(fd) }, nil
}

func TestCopy_Xattrs(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	write(t, filepath.Join(src, "f"), "x", 0o644)
	must(t, os.Mkdir(filepath.Join(src, "opaque"), 0o755))
	err := unix.Lsetxattr(filepath.Join(src, "f"), "user.tine", []byte("v1"), 0)
	if errors.Is(err, unix.ENOTSUP) {
		t.Skip("temp dir filesystem has no user xattrs")
	}
	must(t, err)
	if os.Geteuid() == 0 {
		must(t, unix.Lsetxattr(filepath.Join(src, "opaque"), "trusted.overlay.opaque", []byte("y"), 0))
	} else {
		t.Log("not root: trusted.overlay.opaque not checked")
	}
	must(t, fstree.Copy(context.Background(), src, dst, fstree.CopyOptions{}))
	checkSameTree(t, src, dst)
	if os.Geteuid() == 0 {
		got := xattrsOf(t, filepath.Join(dst, "opaque"))["trusted.overlay.opaque"]
		if got != "y" {
			t.Errorf("opaque mark = %q, want y", got)
		}
	}
}

func TestCopy_Owner(t *testing.T) {
	testkit.RequireRoot(t, "chown to another user")
	src, dst := t.TempDir(), t.TempDir()
	write(t, filepath.Join(src, "f"), "x", 0o755|fs.ModeSetuid|fs.ModeSetgid)
	must(t, os.Symlink("f", filepath.Join(src, "l")))
	must(t, os.Mkdir(filepath.Join(src, "d"), 0o700))
	for _, name := range []string{"f", "l", "d"} {
		must(t, os.Lchown(filepath.Join(src, name), 1234, 5678))
	}
	must(t, os.Chmod(filepath.Join(src, "f"), 0o755|fs.ModeSetuid|fs.ModeSetgid))
	must(t, fstree.Copy(context.Background(), src, dst, fstree.CopyOptions{}))
	checkSameTree(t, src, dst) // owners and setuid bits included
}

func TestCopy_ReflinkXFS(t *testing.T) {
	fsdir := loopfs.Mount(t, "xfs")
	src, dst := filepath.Join(fsdir, "src"), filepath.Join(fsdir, "dst")
	must(t, os.Mkdir(src, 0o755))
	must(t, os.Mkdir(dst, 0o755))
	buildTree(t, src)
	write(t, filepath.Join(src, "big"), string(make([]byte, 1<<20)), 0o644)
	opt := fstree.CopyOptions{Reflink: true, RequireReflink: true}
	must(t, fstree.Copy(context.Background(), src, dst, opt))
	checkSameTree(t, src, dst)
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(dst, "ro"), 0o755) })
}

func TestCopy_RequireReflinkAcrossFilesystems(t *testing.T) {
	fsdir := loopfs.Mount(t, "xfs")
	src := t.TempDir()
	write(t, filepath.Join(src, "f"), "data", 0o644)
	opt := fstree.CopyOptions{Reflink: true, RequireReflink: true}
	if err := fstree.Copy(context.Background(), src, fsdir, opt); err == nil {
		t.Fatal("FICLONE across filesystems succeeded")
	}
}

func BenchmarkCopy_ReflinkXFS(b *testing.B) {
	src := filepath.Join(loopfs.Mount(b, "xfs"), "src")
	benchCopy(b, src, fstree.CopyOptions{Reflink: true, RequireReflink: true})
}

func BenchmarkCopy_XFS(b *testing.B) {
	benchCopy(b, filepath.Join(loopfs.Mount(b, "xfs"), "src"), fstree.CopyOptions{})
}

// TestCopyMeta_UserTree: into a user's tree, CopyMeta carries a file's
// own attributes, trusted.* included, and never overlayfs' (trusted.overlay.*,
// user.overlay.*); into a layer (the default, as Copy copies) it carries
// them all. Owner, mode and times come along either way.
func TestCopyMeta_UserTree(t *testing.T) {
	testkit.RequireRoot(t, "trusted.* attributes and chown")
	src := filepath.Join(t.TempDir(), "f")
	write(t, src, "x", 0o640|fs.ModeSetgid)
	names := []string{"user.tine", "trusted.tine", "trusted.overlay.opaque", "user.overlay.opaque"}
	for _, n := range names {
		if err := unix.Lsetxattr(src, n, []byte("v"), 0); errors.Is(err, unix.ENOTSUP) {
			t.Skipf("temp dir filesystem has no %s", n)
		} else {
			must(t, err)
		}
	}
	must(t, os.Lchown(src, 1234, 5678))
	old := time.Unix(1e9, 5)
	must(t, os.Chtimes(src, old, old))
	fi, err := os.Lstat(src)
	must(t, err)
	for _, tc := range []struct {
		o    fstree.MetaOptions
		want []string
	}{
		{fstree.MetaOptions{UserTree: true}, names[:2]},
		{fstree.MetaOptions{}, names},
	} {
		dst := filepath.Join(t.TempDir(), "f")
		write(t, dst, "x", 0o600)
		must(t, fstree.CopyMeta(src, dst, fi, tc.o))
		got := xattrsOf(t, dst)
		if len(got) != len(tc.want) {
			t.Errorf("UserTree %v: attributes %v, want %v", tc.o.UserTree, got, tc.want)
		}
		for _, n := range tc.want {
			if got[n] != "v" {
				t.Errorf("UserTree %v: %s = %q, want v", tc.o.UserTree, n, got[n])
			}
		}
		dfi, err := os.Lstat(dst)
		must(t, err)
		st := dfi.Sys().(*syscall.Stat_t)
		if dfi.Mode() != fi.Mode() || st.Uid != 1234 || st.Gid != 5678 || !dfi.ModTime().Equal(old) {
			t.Errorf("UserTree %v: %v %d:%d %v, want %v 1234:5678 %v", tc.o.UserTree, dfi.Mode(), st.Uid, st.Gid, dfi.ModTime(), fi.Mode(), old)
		}
	}
}
