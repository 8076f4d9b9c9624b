//go:build linux

package fstree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A run can make a chain of directories whose full path is longer than
// PATH_MAX (4096 bytes: each name at most 255, made one level at a time
// with cd or openat), and the kernel refuses such a path in any single
// system call with ENAMETOOLONG. Every call fstree makes on a path, and
// every one of the exported forms below, goes through resolve: a short
// path is passed as it is (relative to the working directory, AT_FDCWD), a
// long one is opened a chunk of whole components at a time, each chunk
// relative to the directory the last one opened, and the call is made in
// its *at form on the rest. Intermediate components are looked up as the
// kernel looks them up in one call (symlinks among them followed); the
// last one is treated as the call says (never followed by Lstat).

// shortPath is the longest path passed to the kernel whole. It leaves
// room for the /proc/self/fd/N/ prefix of calls without an *at form.
const shortPath = unix.PathMax - 64

// atPath is a path as the *at system calls take it: a directory and a
// name below it short enough for one call.
type atPath struct {
	dir  int    // AT_FDCWD, or a directory opened with O_PATH
	name string // relative to dir (or absolute, with AT_FDCWD)
}

// close releases r's directory.
func (r atPath) close() {
	if r.dir != unix.AT_FDCWD {
		unix.Close(r.dir)
	}
}

// proc returns a path that names r in a call without an *at form (the
// extended attribute calls): r's name itself when it is relative to the
// working directory, its directory's /proc/self/fd entry and the name
// otherwise.
func (r atPath) proc() string {
	if r.dir == unix.AT_FDCWD {
		return r.name
	}
	return fmt.Sprintf("/proc/self/fd/%d/%s", r.dir, r.name)
}

// splitLong splits p into a directory and a name short enough for one
// system call, opening the directory part of a long p chunk by chunk.
// A single name too long for any call fails with ENAMETOOLONG. Its errors
// are *os.PathError naming p, as the call on p itself would fail.
func splitLong(p string) (atPath, error) {
	r := atPath{dir: unix.AT_FDCWD, name: p}
	for len(r.name) >= shortPath {
		i := strings.LastIndexByte(r.name[:shortPath], '/')
		if i < 0 {
			r.close()
			return atPath{}, &os.PathError{Op: "resolve", Path: p, Err: unix.ENAMETOOLONG}
		}
		prefix := r.name[:i]
		if i == 0 {
			prefix = "/"
		}
		fd, err := openat(r.dir, prefix, unix.O_PATH|unix.O_DIRECTORY, 0)
		r.close()
		if err != nil {
			return atPath{}, &os.PathError{Op: "open", Path: p, Err: err}
		}
		r.dir, r.name = fd, strings.TrimLeft(r.name[i:], "/")
		if r.name == "" {
			r.name = "."
		}
	}
	return r, nil
}

// openat is unix.Openat with O_CLOEXEC, retried on EINTR.
func openat(dir int, name string, flag int, perm uint32) (int, error) {
	for {
		fd, err := unix.Openat(dir, name, flag|unix.O_CLOEXEC, perm)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}

// at resolves p and calls f on the result, returning f's error as a
// *os.PathError of op on p.
func at(op, p string, f func(r atPath) error) error {
	r, err := splitLong(p)
	if err != nil {
		return err
	}
	defer r.close()
	if err := f(r); err != nil {
		return &os.PathError{Op: op, Path: p, Err: err}
	}
	return nil
}

// OpenFile is os.OpenFile for a path of any length. Add O_NOFOLLOW to flag
// to refuse a symlink at p.
func OpenFile(p string, flag int, perm fs.FileMode) (*os.File, error) {
	if len(p) < shortPath {
		return os.OpenFile(p, flag, perm)
	}
	var fd int
	err := at("open", p, func(r atPath) (err error) {
		fd, err = openat(r.dir, r.name, flag, unixMode(perm))
		return err
	})
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), p), nil
}

// Lstat is os.Lstat for a path of any length.
func Lstat(p string) (fs.FileInfo, error) {
	if len(p) < shortPath {
		return os.Lstat(p)
	}
	f, err := OpenFile(p, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}

// Readlink is os.Readlink for a path of any length.
func Readlink(p string) (string, error) {
	if len(p) < shortPath {
		return os.Readlink(p)
	}
	var target string
	err := at("readlink", p, func(r atPath) error {
		for size := 256; ; size *= 2 {
			b := make([]byte, size)
			n, err := unix.Readlinkat(r.dir, r.name, b)
			if err != nil || n < size {
				target = string(b[:max(n, 0)])
				return err
			}
		}
	})
	return target, err
}

// Mkdir is os.Mkdir for a path of any length.
func Mkdir(p string, perm fs.FileMode) error {
	return at("mkdir", p, func(r atPath) error { return unix.Mkdirat(r.dir, r.name, unixMode(perm)) })
}

// Symlink is os.Symlink (making p a symlink to target) for a path p of any
// length.
func Symlink(target, p string) error {
	return at("symlink", p, func(r atPath) error { return unix.Symlinkat(target, r.dir, r.name) })
}

// Chmod is os.Chmod for a path of any length. It follows a symlink at p,
// as chmod(2) does.
func Chmod(p string, mode fs.FileMode) error {
	return at("chmod", p, func(r atPath) error { return unix.Fchmodat(r.dir, r.name, unixMode(mode), 0) })
}

// Lchown is os.Lchown for a path of any length.
func Lchown(p string, uid, gid int) error {
	return at("lchown", p, func(r atPath) error {
		return unix.Fchownat(r.dir, r.name, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
	})
}

// Remove removes the file or empty directory p, of any length.
func Remove(p string) error {
	return at("remove", p, func(r atPath) error {
		err := unix.Unlinkat(r.dir, r.name, 0)
		if errors.Is(err, unix.EISDIR) {
			err = unix.Unlinkat(r.dir, r.name, unix.AT_REMOVEDIR)
		}
		return err
	})
}

// at2 resolves two paths and calls f on both, returning f's error as a
// *os.LinkError of op.
func at2(op, oldp, newp string, f func(o, n atPath) error) error {
	o, err := splitLong(oldp)
	if err != nil {
		return err
	}
	defer o.close()
	n, err := splitLong(newp)
	if err != nil {
		return err
	}
	defer n.close()
	if err := f(o, n); err != nil {
		return &os.LinkError{Op: op, Old: oldp, New: newp, Err: err}
	}
	return nil
}

// Link is os.Link for paths of any length.
func Link(oldp, newp string) error {
	return at2("link", oldp, newp, func(o, n atPath) error { return unix.Linkat(o.dir, o.name, n.dir, n.name, 0) })
}

// Rename is os.Rename for paths of any length.
func Rename(oldp, newp string) error {
	return at2("rename", oldp, newp, func(o, n atPath) error { return unix.Renameat(o.dir, o.name, n.dir, n.name) })
}

// Lgetxattr returns the value of p's extended attribute name, without
// following a symlink at p, for a path of any length.
func Lgetxattr(p, name string) ([]byte, error) {
	var val []byte
	err := at("lgetxattr "+name, p, func(r atPath) (err error) {
		val, err = getXattr(r.proc(), name)
		return err
	})
	return val, err
}

// Llistxattr returns the names of p's extended attributes, without
// following a symlink at p, for a path of any length.
func Llistxattr(p string) ([]string, error) {
	var names []string
	err := at("llistxattr", p, func(r atPath) (err error) {
		names, err = listXattrs(r.proc())
		return err
	})
	return names, err
}

// Lsetxattr sets p's extended attribute name to val, without following a
// symlink at p, for a path of any length.
func Lsetxattr(p, name string, val []byte) error {
	return at("lsetxattr "+name, p, func(r atPath) error { return unix.Lsetxattr(r.proc(), name, val, 0) })
}

// Lremovexattr removes p's extended attribute name, without following a
// symlink at p, for a path of any length.
func Lremovexattr(p, name string) error {
	return at("lremovexattr "+name, p, func(r atPath) error { return unix.Lremovexattr(r.proc(), name) })
}

// Lchtimes sets the access and modification times of p, without following
// a symlink at p, for a path of any length.
func Lchtimes(p string, atime, mtime time.Time) error { return lchtimes(p, 0, atime, mtime) }

// unixMode returns the mode bits of m as the system calls take them:
// permissions with setuid, setgid and sticky.
func unixMode(m fs.FileMode) uint32 {
	out := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		out |= unix.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		out |= unix.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		out |= unix.S_ISVTX
	}
	return out
}

// removeAll is os.RemoveAll for a path of any length. os.RemoveAll walks
// below its path by directory descriptors (unlinkat), so only the path
// itself needs shortening: through /proc/self/fd when it is long.
func removeAll(p string) error {
	if len(p) < shortPath {
		return os.RemoveAll(p)
	}
	r, err := splitLong(p)
	if err != nil {
		return err
	}
	defer r.close()
	if err := os.RemoveAll(r.proc()); err != nil {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	return nil
}
