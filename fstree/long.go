package fstree

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Open is os.Open for a path of any length.
func Open(p string) (*os.File, error) { return OpenFile(p, os.O_RDONLY, 0) }

// ReadFile is os.ReadFile for a path of any length.
func ReadFile(p string) ([]byte, error) {
	f, err := Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// ReadDir is os.ReadDir for a directory at a path of any length: its
// entries sorted by name, each one's Info found with Lstat.
func ReadDir(dir string) ([]fs.DirEntry, error) {
	f, err := Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	list, err := f.ReadDir(-1)
	out := make([]fs.DirEntry, len(list))
	for i, d := range list {
		out[i] = dirEntry{DirEntry: d, path: filepath.Join(dir, d.Name())}
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, err
}

// dirEntry is a directory entry whose Info works at any depth.
type dirEntry struct {
	fs.DirEntry
	path string
}

// Info returns the entry's Lstat.
func (d dirEntry) Info() (fs.FileInfo, error) { return Lstat(d.path) }

// WalkDir is filepath.WalkDir for a tree of any depth: directories are
// read with ReadDir and the root found with Lstat, so a tree holding
// paths longer than PATH_MAX is walked whole. fn gets the paths joined
// from root, as filepath.WalkDir gives them; pass them to the functions of
// this package, not to package os, where they may be too long.
func WalkDir(root string, fn fs.WalkDirFunc) error {
	info, err := Lstat(root)
	if err != nil {
		err = fn(root, nil, err)
	} else {
		err = walkDir(root, fs.FileInfoToDirEntry(info), fn)
	}
	if err == filepath.SkipDir || err == filepath.SkipAll {
		return nil
	}
	return err
}

// walkDir walks p, described by d, as filepath.WalkDir does.
func walkDir(p string, d fs.DirEntry, fn fs.WalkDirFunc) error {
	if err := fn(p, d, nil); err != nil || !d.IsDir() {
		if err == filepath.SkipDir && d.IsDir() {
			err = nil
		}
		return err
	}
	entries, err := ReadDir(p)
	if err != nil {
		if err = fn(p, d, err); err != nil {
			if err == filepath.SkipDir {
				err = nil
			}
			return err
		}
	}
	for _, e := range entries {
		if err := walkDir(filepath.Join(p, e.Name()), e, fn); err != nil {
			if err == filepath.SkipDir {
				break
			}
			return err
		}
	}
	return nil
}
