package fstree

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A Root is a directory held open by a descriptor, beneath which paths
// are opened by the descriptor, never by name: on Linux each open is one
// openat2 with RESOLVE_BENEATH, RESOLVE_NO_SYMLINKS and
// RESOLVE_NO_MAGICLINKS, so no symlink is followed, in a parent or the
// last component, and nothing outside the directory is reached, whatever
// whoever writes into the tree does to it meanwhile.
//
// tine reads a fork's files on the host through a Root: a fork owns its
// view and can turn any directory in it into a symlink to a host path (and
// back) between a listing and a read; read by name, the host would follow
// it and show a file the fork could not read (another workspace's, tine's
// own state). Through a Root such a read fails with ELOOP instead.
//
// Relative paths are slash-separated; "." is the root itself. A path may
// be longer than PATH_MAX: it is opened a chunk of whole components at a
// time, each beneath the directory the last one opened.

// ReadFileBeneath reads the regular file rel beneath r, at most limit bytes
// (limit < 0: no limit). A symlink, a directory, a fifo or a device at rel,
// or a symlink on the way to it, is an error: nothing but a regular file
// of the tree is read. The file's description comes from the opened
// descriptor.
func (r *Root) ReadFileBeneath(rel string, limit int64) ([]byte, fs.FileInfo, error) {
	f, err := r.Open(rel)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fi, &os.PathError{Op: "read", Path: f.Name(), Err: errNotRegular}
	}
	var rd io.Reader = f
	if limit >= 0 {
		rd = io.LimitReader(f, limit)
	}
	b, err := io.ReadAll(rd)
	return b, fi, err
}

// Name returns the path r was opened at.
func (r *Root) Name() string { return r.name }

// Join returns the filesystem path of rel, for messages: never open it.
func (r *Root) Join(rel string) string { return filepath.Join(r.name, filepath.FromSlash(rel)) }

// MkdirAll makes directory rel beneath r with perm (before the umask),
// and any of its parents missing; a symlink on the way is an error.
func (r *Root) MkdirAll(rel string, perm fs.FileMode) error {
	if rel == "." || rel == "" {
		return nil
	}
	parts := strings.Split(rel, "/")
	for i := range parts {
		if err := r.mkdir(strings.Join(parts[:i+1], "/"), perm); err != nil {
			return err
		}
	}
	return nil
}

// mkdir makes directory rel beneath r, whose parent exists, unless a
// directory is there.
func (r *Root) mkdir(rel string, perm fs.FileMode) error {
	p, release, err := r.Pin(rel)
	if err != nil {
		return err
	}
	defer release()
	err = Mkdir(p, perm)
	if errors.Is(err, fs.ErrExist) {
		if fi, lerr := Lstat(p); lerr == nil && fi.IsDir() {
			return nil
		}
	}
	return err
}

// WriteFile replaces whatever is at rel beneath r (a file, an empty
// directory; rel's parent must exist) with a new regular file holding
// data, mode perm (before the umask).
func (r *Root) WriteFile(rel string, data []byte, perm fs.FileMode) error {
	p, release, err := r.Pin(rel)
	if err != nil {
		return err
	}
	defer release()
	if err := Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|openFileFlags, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// RemoveAll removes rel beneath r and everything below it, reached through
// rel's parent held open; a rel already gone is no error.
func (r *Root) RemoveAll(rel string) error {
	p, release, err := r.Pin(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer release()
	return os.RemoveAll(p)
}
