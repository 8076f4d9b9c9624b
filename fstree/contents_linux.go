//go:build linux

package fstree

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// nextData returns the first data extent of f at or after off, as the
// offsets of its start and of the hole that ends it (at most size). It
// returns io.EOF when nothing but a hole is left before size, and
// errNoHoles when the filesystem has no SEEK_DATA.
func nextData(f *os.File, off, size int64) (data, hole int64, err error) {
	fd := int(f.Fd())
	data, err = unix.Seek(fd, off, unix.SEEK_DATA)
	if errors.Is(err, unix.ENXIO) || err == nil && data >= size {
		return 0, 0, io.EOF
	}
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP) {
		return 0, 0, errNoHoles
	}
	if err != nil {
		return 0, 0, &os.PathError{Op: "lseek SEEK_DATA", Path: f.Name(), Err: err}
	}
	hole, err = unix.Seek(fd, data, unix.SEEK_HOLE)
	if errors.Is(err, unix.ENXIO) {
		return 0, 0, io.EOF // truncated between the two calls
	}
	if err != nil {
		return 0, 0, &os.PathError{Op: "lseek SEEK_HOLE", Path: f.Name(), Err: err}
	}
	return data, min(hole, size), nil
}

// maxChunk bounds one copy_file_range call.
const maxChunk = 1 << 30

// copyFileRange copies n bytes at off from src to the same offset of dst
// in the kernel, or fewer if src ends first, and returns how many it
// copied. An error wrapping errors.ErrUnsupported means copy_file_range
// cannot be used for these files; the count says how far it got.
func copyFileRange(dst, src *os.File, off, n int64) (int64, error) {
	rfd, wfd := int(src.Fd()), int(dst.Fd())
	var done int64
	for done < n {
		roff, woff := off+done, off+done
		m, err := unix.CopyFileRange(rfd, &roff, wfd, &woff, int(min(n-done, maxChunk)), 0)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case cfrUnsupported(err):
			return done, fmt.Errorf("copy_file_range: %w: %w", errors.ErrUnsupported, err)
		case err != nil:
			return done, &os.PathError{Op: "copy_file_range", Path: dst.Name(), Err: err}
		case m == 0:
			// End of file, or a filesystem that reports 0 for files it
			// cannot copy (procfs, some FUSE): let a byte copy tell.
			return done, fmt.Errorf("copy_file_range: no progress: %w", errors.ErrUnsupported)
		}
		done += int64(m)
	}
	return done, nil
}

// cfrUnsupported reports whether err from copy_file_range means the call
// cannot serve these two files (no such call, across filesystems, a
// filesystem that refuses), not that the copy itself failed.
func cfrUnsupported(err error) bool {
	for _, e := range []error{unix.ENOSYS, unix.EXDEV, unix.EINVAL, unix.EOPNOTSUPP, unix.EPERM, unix.EBADF} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
