//go:build linux

package fstree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// Root is a directory held open; see the package's note on Root in
// root.go.
type Root struct {
	name string
	fd   int
}

// beneath is how a Root resolves a path: below it, following no symlink.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// errNotRegular says a read beneath a Root found something other than a
// regular file.
var errNotRegular = errors.New("not a regular file")

// OpenRoot opens directory dir as a Root. dir itself is resolved as any
// path is: it must be a path the caller trusts (a view's mount point, a
// layer), not one an untrusted party can swap.
func OpenRoot(dir string) (*Root, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	return &Root{name: dir, fd: fd}, nil
}

// RootOf makes a Root of the directory f, which stays f's: closing the
// Root does not close f, and the Root is not used after f is closed.
func RootOf(f *os.File) *Root { return &Root{name: f.Name(), fd: int(f.Fd())} }

// Close releases r.
func (r *Root) Close() error { return unix.Close(r.fd) }

// Fd returns r's descriptor, for the *at calls, open until Close.
func (r *Root) Fd() int { return r.fd }

// chunkMax is the longest path handed to one openat2.
const chunkMax = unix.PathMax - 64

// OpenAt opens rel beneath r with flags (O_CLOEXEC added) and returns the
// descriptor, which the caller closes. A rel too long for one call is
// opened a chunk of whole components at a time, each beneath the directory
// the last one opened, so nothing is followed or escaped across chunks
// either. A symlink met on the way is ELOOP (O_PATH|O_NOFOLLOW opens a
// symlink at rel itself).
func (r *Root) OpenAt(rel string, flags int) (int, error) {
	dir, rest := r.fd, rel
	defer func() {
		if dir != r.fd {
			unix.Close(dir)
		}
	}()
	for len(rest) >= chunkMax {
		i := strings.LastIndexByte(rest[:chunkMax], '/')
		if i <= 0 {
			return -1, &os.PathError{Op: "openat2", Path: r.Join(rel), Err: unix.ENAMETOOLONG}
		}
		fd, err := openat2(dir, rest[:i], unix.O_PATH|unix.O_DIRECTORY)
		if err != nil {
			return -1, &os.PathError{Op: "openat2", Path: r.Join(rel), Err: err}
		}
		if dir != r.fd {
			unix.Close(dir)
		}
		dir, rest = fd, rest[i+1:]
	}
	fd, err := openat2(dir, rest, flags)
	if err != nil {
		return -1, &os.PathError{Op: "openat2", Path: r.Join(rel), Err: err}
	}
	return fd, nil
}

// openat2 opens name beneath directory dir with flags, following no
// symlink, retried on EINTR and EAGAIN.
func openat2(dir int, name string, flags int) (int, error) {
	how := &unix.OpenHow{Flags: uint64(flags) | unix.O_CLOEXEC, Resolve: beneath}
	for {
		fd, err := unix.Openat2(dir, name, how)
		if err != unix.EINTR && err != unix.EAGAIN {
			return fd, err
		}
	}
}

// OpenFile opens rel beneath r with flag (O_NOFOLLOW added: a symlink at
// rel is refused as any other is).
func (r *Root) OpenFile(rel string, flag int) (*os.File, error) {
	fd, err := r.OpenAt(rel, flag|unix.O_NOFOLLOW)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), r.Join(rel)), nil
}

// Open opens rel beneath r for reading: a file, or a directory to list. It
// never blocks on a fifo put in a file's place; Stat the result to see what
// was opened.
func (r *Root) Open(rel string) (*os.File, error) {
	return r.OpenFile(rel, unix.O_RDONLY|unix.O_NONBLOCK)
}

// Lstat describes rel beneath r without following a symlink at rel. A
// symlink on the way to rel is an error wrapping ELOOP.
func (r *Root) Lstat(rel string) (fs.FileInfo, error) {
	f, err := r.OpenFile(rel, unix.O_PATH)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Stat()
}

// Readlink returns the target of the symlink rel beneath r.
func (r *Root) Readlink(rel string) (string, error) {
	fd, err := r.OpenAt(rel, unix.O_PATH|unix.O_NOFOLLOW)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	for size := 256; ; size *= 2 {
		b := make([]byte, size)
		n, err := unix.Readlinkat(fd, "", b)
		if err != nil {
			return "", &os.PathError{Op: "readlink", Path: r.Join(rel), Err: err}
		}
		if n < size {
			return string(b[:n]), nil
		}
	}
}

// Pin opens the directory holding rel beneath r and returns a path that
// names rel through that open directory (/proc/self/fd/N/name), valid
// until release is called. Handed to a call that does not follow its last
// component (Lstat, Readlink, an open with O_NOFOLLOW, the l*xattr calls),
// the path reaches rel in the tree and nothing else, whatever becomes of
// rel's parents meanwhile. It lets the path-taking code of this package
// read a tree beneath a Root.
func (r *Root) Pin(rel string) (p string, release func(), err error) {
	fd, err := r.OpenAt(path.Dir(rel), unix.O_PATH|unix.O_DIRECTORY)
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("/proc/self/fd/%d/%s", fd, path.Base(rel)), func() { unix.Close(fd) }, nil
}

// IsSymlinkErr reports whether err says a path met a symlink where a Root
// follows none (ELOOP).
func IsSymlinkErr(err error) bool { return errors.Is(err, unix.ELOOP) }

// OpenRoot opens the directory rel beneath r as a Root of its own, which
// the caller closes: a directory reached without following a symlink, so
// one whose name others can swap.
func (r *Root) OpenRoot(rel string) (*Root, error) {
	fd, err := r.OpenAt(rel, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW)
	if err != nil {
		return nil, err
	}
	return &Root{name: r.Join(rel), fd: fd}, nil
}
