//go:build !linux

package fstree

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// Root is a directory named by its path: off Linux, where openat2 is
// missing, its opens are by name, and not proof against a tree changing
// under them.
type Root struct {
	name string
	f    *os.File
	own  bool
}

// errNotRegular says a read beneath a Root found something other than a
// regular file.
var errNotRegular = errors.New("not a regular file")

// OpenRoot opens directory dir as a Root.
func OpenRoot(dir string) (*Root, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	return &Root{name: dir, f: f, own: true}, nil
}

// RootOf makes a Root of the directory f, which stays f's.
func RootOf(f *os.File) *Root { return &Root{name: f.Name(), f: f} }

// Close releases r.
func (r *Root) Close() error {
	if !r.own {
		return nil
	}
	return r.f.Close()
}

// OpenFile opens rel beneath r with flag, refusing a symlink at rel.
func (r *Root) OpenFile(rel string, flag int) (*os.File, error) {
	if fi, err := os.Lstat(r.Join(rel)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, &os.PathError{Op: "open", Path: r.Join(rel), Err: syscall.ELOOP}
	}
	return os.OpenFile(r.Join(rel), flag|openFileFlags, 0)
}

// Open opens rel beneath r for reading.
func (r *Root) Open(rel string) (*os.File, error) { return r.OpenFile(rel, os.O_RDONLY) }

// Lstat describes rel beneath r.
func (r *Root) Lstat(rel string) (fs.FileInfo, error) { return os.Lstat(r.Join(rel)) }

// Readlink returns the target of the symlink rel beneath r.
func (r *Root) Readlink(rel string) (string, error) { return os.Readlink(r.Join(rel)) }

// Pin returns rel's path.
func (r *Root) Pin(rel string) (p string, release func(), err error) {
	return r.Join(rel), func() {}, nil
}

// IsSymlinkErr reports whether err says a path met a symlink.
func IsSymlinkErr(err error) bool { return errors.Is(err, syscall.ELOOP) }

// OpenRoot opens the directory rel beneath r as a Root of its own, which
// the caller closes; a symlink at rel is refused.
func (r *Root) OpenRoot(rel string) (*Root, error) {
	f, err := r.OpenFile(rel, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	return &Root{name: r.Join(rel), f: f, own: true}, nil
}
