package fstree

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
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
