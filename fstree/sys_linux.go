//go:build linux

package fstree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// statOf extracts the inode details of fi.
func statOf(fi fs.FileInfo) inode {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return inode{nlink: 1, atime: fi.ModTime()}
	}
	return inode{
		dev: st.Dev, ino: st.Ino, nlink: uint64(st.Nlink), rdev: st.Rdev,
		uid: int(st.Uid), gid: int(st.Gid),
		atime: time.Unix(st.Atim.Unix()),
	}
}

// cloneFile makes dst share src's data blocks with the FICLONE ioctl.
func cloneFile(dst, src *os.File) error {
	if err := unix.IoctlFileClone(int(dst.Fd()), int(src.Fd())); err != nil {
		return &os.PathError{Op: "ioctl FICLONE", Path: dst.Name(), Err: err}
	}
	return nil
}

// mknod creates a fifo, socket or device node of type t at path. Overlay
// whiteouts are character devices 0/0 and come through here.
func mknod(path string, t fs.FileMode, rdev uint64) error {
	var kind uint32
	switch {
	case t&fs.ModeNamedPipe != 0:
		kind = unix.S_IFIFO
	case t&fs.ModeSocket != 0:
		kind = unix.S_IFSOCK
	case t&fs.ModeCharDevice != 0:
		kind = unix.S_IFCHR
	default:
		kind = unix.S_IFBLK
	}
	return at("mknod", path, func(r atPath) error { return unix.Mknodat(r.dir, r.name, kind|0o600, int(rdev)) })
}

// lchtimes sets the access and modification times of path without
// following a symlink.
func lchtimes(path string, _ fs.FileMode, atime, mtime time.Time) error {
	ts := []unix.Timespec{
		unix.NsecToTimespec(atime.UnixNano()),
		unix.NsecToTimespec(mtime.UnixNano()),
	}
	return at("utimensat", path, func(r atPath) error {
		return unix.UtimesNanoAt(r.dir, r.name, ts, unix.AT_SYMLINK_NOFOLLOW)
	})
}

// renameNoReplace renames oldpath to newpath, failing if newpath exists.
func renameNoReplace(oldpath, newpath string) error {
	err := at2("rename", oldpath, newpath, func(o, n atPath) error {
		return unix.Renameat2(o.dir, o.name, n.dir, n.name, unix.RENAME_NOREPLACE)
	})
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return renameChecked(oldpath, newpath)
	}
	return err
}

// copyXattrs copies the extended attributes of src that policy p carries
// (every one, trusted.* included when root, but overlayfs' own in a user's
// tree) onto dst, without following symlinks.
func copyXattrs(src, dst string, p xattrPolicy) error {
	s, err := splitLong(src)
	if err != nil {
		return err
	}
	defer s.close()
	d, err := splitLong(dst)
	if err != nil {
		return err
	}
	defer d.close()
	return copyXattrsAt(src, dst, s.proc(), d.proc(), p)
}

// copyXattrsAt is copyXattrs on the short forms sp and dp of src and dst,
// whose names its errors carry.
func copyXattrsAt(src, dst, sp, dp string, p xattrPolicy) error {
	names, err := listXattrs(sp)
	if err != nil {
		if p.forgives(err, "") {
			return nil
		}
		return &os.PathError{Op: "llistxattr", Path: src, Err: err}
	}
	for _, name := range names {
		if !p.carries(name) {
			continue
		}
		if err := copyXattr(src, dst, sp, dp, name, p); err != nil {
			return err
		}
	}
	return nil
}

// copyXattr copies the extended attribute name of src onto dst, whose
// short forms are sp and dp.
func copyXattr(src, dst, sp, dp, name string, p xattrPolicy) error {
	val, err := getXattr(sp, name)
	if errors.Is(err, unix.ENODATA) || (err != nil && p.userTree && p.forgives(err, name)) {
		return nil // removed meanwhile, or not ours to read
	}
	if err != nil {
		return &os.PathError{Op: "lgetxattr " + name, Path: src, Err: err}
	}
	err = unix.Lsetxattr(dp, name, val, 0)
	if err != nil && !p.forgives(err, name) {
		return &os.PathError{Op: "lsetxattr " + name, Path: dst, Err: err}
	}
	return nil
}

// carries reports whether a copy under p copies the attribute name: every
// one into a layer; into a user's tree, all but overlayfs' own.
func (p xattrPolicy) carries(name string) bool {
	return !p.userTree || !(strings.HasPrefix(name, "trusted.overlay.") || strings.HasPrefix(name, "user.overlay."))
}

// forgives reports whether a failure on xattr name may be ignored: into a
// user's tree, when the filesystem does not support it or refuses it (or it
// is gone); into a layer, when the filesystem does not support it (unless
// it is a trusted.* one, an overlay mark perhaps, which must not vanish
// silently) or we are not root.
func (p xattrPolicy) forgives(err error, name string) bool {
	if p.userTree && (errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENODATA)) {
		return true
	}
	if errors.Is(err, unix.ENOTSUP) {
		return !p.root || !strings.HasPrefix(name, "trusted.")
	}
	return !p.root && errors.Is(err, unix.EPERM)
}

// listXattrs returns the names of path's extended attributes.
func listXattrs(path string) ([]string, error) {
	buf, err := readXattrBuf(func(b []byte) (int, error) { return unix.Llistxattr(path, b) })
	if err != nil || len(buf) == 0 {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(buf), "\x00"), "\x00"), nil
}

// getXattr returns the value of path's extended attribute name.
func getXattr(path, name string) ([]byte, error) {
	return readXattrBuf(func(b []byte) (int, error) { return unix.Lgetxattr(path, name, b) })
}

// readXattrBuf calls get first to size and then to fill a buffer, retrying
// when the value grew in between.
func readXattrBuf(get func([]byte) (int, error)) ([]byte, error) {
	for {
		n, err := get(nil)
		if err != nil || n == 0 {
			return nil, err
		}
		buf := make([]byte, n)
		n, err = get(buf)
		if errors.Is(err, unix.ERANGE) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return buf[:n], nil
	}
}

// heldPrefix returns the path naming directory f, held open at p, through
// its descriptor: the entries below are reached from the directory itself,
// whatever becomes of the names above it.
func heldPrefix(f *os.File, _ string) string { return fmt.Sprintf("/proc/self/fd/%d", f.Fd()) }

// lchmod sets the permission bits of p, not following a symlink at p: the
// entry is opened with O_PATH|O_NOFOLLOW and changed through its
// descriptor, and a symlink (whose bits mean nothing) is left as it is.
func lchmod(p string, mode fs.FileMode) error {
	return at("chmod", p, func(r atPath) error {
		fd, err := openat(r.dir, r.name, unix.O_PATH|unix.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return nil
		}
		return unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", fd), unixMode(mode))
	})
}
