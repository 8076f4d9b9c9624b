// Command walk prints what a directory tree holds, a line per path: the
// path (slash-separated, relative to the root, "." for the root itself,
// Go-quoted), then tab-separated its type, mode, size, a SHA-256 of a
// file's bytes or a symlink's target (quoted), owner, modification time,
// inode, link count and device number. Symlinks are never followed. With
// -names it records only types, without reading files.
//
// The end-to-end tests of tine build it once and run it on the host and,
// through tine exec, inside runs.
package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"golang.org/x/sys/unix"
)

// entry is what the walk records of one path.
type entry struct {
	Type  string // file, dir, symlink or other
	Mode  uint32 // permission bits with setuid, setgid and sticky
	Size  int64  // bytes of a file or a link target, else 0
	Data  string
	UID   uint32
	GID   uint32
	MTime int64
	Ino   uint64
	Nlink uint64
	Rdev  uint64
}

func main() {
	names := flag.Bool("names", false, "record only each path's type")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: walk [-names] DIR")
		os.Exit(2)
	}
	tree, err := walk(flag.Arg(0), *names)
	if err == nil {
		err = write(tree)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "walk:", err)
		os.Exit(1)
	}
}

func write(tree map[string]entry) error {
	paths := make([]string, 0, len(tree))
	for p := range tree {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	w := bufio.NewWriter(os.Stdout)
	for _, p := range paths {
		e := tree[p]
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", strconv.Quote(p), e.Type, e.Mode, e.Size,
			strconv.Quote(e.Data), e.UID, e.GID, e.MTime, e.Ino, e.Nlink, e.Rdev)
	}
	return w.Flush()
}

func walk(root string, names bool) (map[string]entry, error) {
	tree := map[string]entry{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		var ent entry
		if names {
			ent.Type = typeName(uint32(d.Type()))
		} else if ent, err = entryOf(p); err != nil {
			return err
		}
		tree[filepath.ToSlash(rel)] = ent
		return nil
	})
	return tree, err
}

func typeName(m uint32) string {
	switch fs.FileMode(m).Type() {
	case 0:
		return "file"
	case fs.ModeDir:
		return "dir"
	case fs.ModeSymlink:
		return "symlink"
	}
	return "other"
}

func entryOf(p string) (entry, error) {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return entry{}, &fs.PathError{Op: "lstat", Path: p, Err: err}
	}
	ent := entry{Mode: st.Mode & 0o7777, UID: st.Uid, GID: st.Gid, MTime: st.Mtim.Nano(), Ino: st.Ino, Nlink: uint64(st.Nlink)}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		b, err := os.ReadFile(p)
		sum := sha256.Sum256(b)
		ent.Type, ent.Data, ent.Size = "file", hex.EncodeToString(sum[:]), int64(len(b))
		return ent, err
	case unix.S_IFDIR:
		ent.Type = "dir"
	case unix.S_IFLNK:
		target, err := os.Readlink(p)
		ent.Type, ent.Data, ent.Size = "symlink", target, int64(len(target))
		return ent, err
	default:
		ent.Type, ent.Rdev = "other", st.Rdev
	}
	return ent, nil
}
