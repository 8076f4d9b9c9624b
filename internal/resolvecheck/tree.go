package resolvecheck

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Type is the type of a Node.
type Type int

// Node types.
const (
	File Type = iota
	Dir
	Symlink
)

func (t Type) String() string {
	switch t {
	case File:
		return "file"
	case Dir:
		return "dir"
	case Symlink:
		return "symlink"
	}
	return "other"
}

// Node is one entry of a Tree.
type Node struct {
	Type   Type
	Perm   fs.FileMode // permission bits (with setuid, setgid, sticky)
	Data   []byte      // a file's content, holes read as zeros
	Target string      // a symlink's target
	Sparse bool        // the file is written with holes wherever Data has a zero hole block
	Link   string      // files with the same non-empty Link are written as hard links of one inode
}

// Clone returns a copy of n (Data is shared: it is never changed in place).
func (n *Node) Clone() *Node {
	c := *n
	return &c
}

// Tree is a file tree in memory: slash-separated relative paths to nodes.
// Every parent of a path in a Tree is a Dir in it.
type Tree map[string]*Node

// Clone returns a copy of t.
func (t Tree) Clone() Tree {
	out := make(Tree, len(t))
	for p, n := range t {
		out[p] = n.Clone()
	}
	return out
}

// Paths returns t's paths sorted, so that a directory comes before what it holds.
func (t Tree) Paths() []string {
	out := make([]string, 0, len(t))
	for p := range t {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Under returns the paths strictly below p in t.
func (t Tree) Under(p string) []string {
	var out []string
	for q := range t {
		if strings.HasPrefix(q, p+"/") {
			out = append(out, q)
		}
	}
	sort.Strings(out)
	return out
}

// RemoveAll removes p and everything below it.
func (t Tree) RemoveAll(p string) {
	delete(t, p)
	for _, q := range t.Under(p) {
		delete(t, q)
	}
}

// IsDir reports whether p is a directory in t; "." always is.
func (t Tree) IsDir(p string) bool {
	if p == "." || p == "" {
		return true
	}
	n := t[p]
	return n != nil && n.Type == Dir
}

// Same reports whether a and b (nil when absent) have the same signature:
// type, permission bits, and content or link target. A directory's
// signature does not include what it holds.
func Same(a, b *Node) bool {
	switch {
	case a == nil || b == nil:
		return a == nil && b == nil
	case a.Type != b.Type || a.Perm != b.Perm:
		return false
	case a.Type == File:
		return bytes.Equal(a.Data, b.Data)
	case a.Type == Symlink:
		return a.Target == b.Target
	}
	return true
}

// Describe is a short, quoted description of n for reports.
func Describe(n *Node) string {
	switch {
	case n == nil:
		return "absent"
	case n.Type == Dir:
		return fmt.Sprintf("dir %04o", n.Perm)
	case n.Type == Symlink:
		return fmt.Sprintf("symlink -> %q", n.Target)
	}
	s := string(n.Data)
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	extra := ""
	if n.Sparse {
		extra = " sparse"
	}
	if n.Link != "" {
		extra += " link=" + n.Link
	}
	return fmt.Sprintf("file %04o %dB%s %q", n.Perm, len(n.Data), extra, s)
}

// String lists t, one path a line, for reproductions.
func (t Tree) String() string {
	var b strings.Builder
	for _, p := range t.Paths() {
		fmt.Fprintf(&b, "  %q: %s\n", p, Describe(t[p]))
	}
	return b.String()
}

// Diff lists how got differs from want (empty when they are the same),
// comparing signatures; with ignore set, paths for which it returns true
// are not compared.
func Diff(want, got Tree, ignore func(string) bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range []Tree{want, got} {
		for p := range t {
			if seen[p] || (ignore != nil && ignore(p)) {
				continue
			}
			seen[p] = true
			if !Same(want[p], got[p]) {
				out = append(out, fmt.Sprintf("%q: want %s, got %s", p, Describe(want[p]), Describe(got[p])))
			}
		}
	}
	sort.Strings(out)
	return out
}

// Skipped reports whether the root entry name is one Read leaves out: git's
// and tine's own files.
func Skipped(rel string) bool {
	first, _, _ := strings.Cut(rel, "/")
	return first == ".git" || strings.HasPrefix(first, ".tine")
}

// Read reads the tree at dir without following symlinks, leaving out
// ".git" and ".tine*" at the top.
func Read(dir string) (Tree, error) {
	t := Tree{}
	err := read(t, dir, ".")
	return t, err
}

func read(t Tree, root, rel string) error {
	ents, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	for _, e := range ents {
		p := path.Join(rel, e.Name())
		if Skipped(p) {
			continue
		}
		n, err := readNode(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil {
			return err
		}
		t[p] = n
		if n.Type == Dir {
			if err := read(t, root, p); err != nil {
				return err
			}
		}
	}
	return nil
}

func readNode(name string) (*Node, error) {
	fi, err := os.Lstat(name)
	if err != nil {
		return nil, err
	}
	n := &Node{Perm: fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)}
	switch {
	case fi.IsDir():
		n.Type = Dir
	case fi.Mode()&fs.ModeSymlink != 0:
		n.Type, n.Perm = Symlink, 0
		n.Target, err = os.Readlink(name)
	case fi.Mode().IsRegular():
		n.Data, err = os.ReadFile(name)
	default:
		return nil, fmt.Errorf("%s: unexpected file type %s", name, fi.Mode().Type())
	}
	return n, err
}

// Write creates the tree t under dir, which must exist: files (sparse ones
// with holes, hard links as links), directories and symlinks. Directory
// permissions are set last, deepest first, so that a read-only directory
// can still be filled.
func Write(dir string, t Tree) error {
	links := map[string]string{}
	paths := t.Paths()
	for _, p := range paths {
		n, name := t[p], filepath.Join(dir, filepath.FromSlash(p))
		var err error
		switch {
		case n.Type == Dir:
			err = os.Mkdir(name, 0o700)
		case n.Type == Symlink:
			err = os.Symlink(n.Target, name)
		case n.Link != "" && links[n.Link] != "":
			err = os.Link(links[n.Link], name)
		default:
			err = WriteFile(name, n)
			if n.Link != "" {
				links[n.Link] = name
			}
		}
		if err != nil {
			return err
		}
	}
	for i := len(paths) - 1; i >= 0; i-- {
		if n := t[paths[i]]; n.Type == Dir {
			if err := os.Chmod(filepath.Join(dir, filepath.FromSlash(paths[i])), n.Perm); err != nil {
				return err
			}
		}
	}
	return nil
}

// holeBlock is the granularity of the holes a sparse Node is written with.
const holeBlock = 64 << 10

// WriteFile writes file node n at name, replacing the content of an existing
// file in place: with holes for every zero block of holeBlock bytes when n
// is sparse.
func WriteFile(name string, n *Node) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if errors.Is(err, fs.ErrPermission) && os.Chmod(name, 0o600) == nil {
		f, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	}
	if err != nil {
		return err
	}
	if n.Sparse {
		err = writeSparse(f, n.Data)
	} else {
		_, err = f.Write(n.Data)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Chmod(name, n.Perm)
}

func writeSparse(f *os.File, data []byte) error {
	zero := make([]byte, holeBlock)
	for off := 0; off < len(data); off += holeBlock {
		end := min(off+holeBlock, len(data))
		if end-off == holeBlock && bytes.Equal(data[off:end], zero) {
			continue
		}
		if _, err := f.WriteAt(data[off:end], int64(off)); err != nil {
			return err
		}
	}
	return f.Truncate(int64(len(data)))
}

// Holes returns, for every regular file under dir whose path t marks
// sparse, the hole blocks (offsets of holeBlock-aligned, holeBlock-long
// ranges with no data) the file has on disk. It returns an error wrapping
// errors.ErrUnsupported where holes cannot be seen.
func Holes(dir string, t Tree) (map[string][]int64, error) {
	out := map[string][]int64{}
	for _, p := range t.Paths() {
		if n := t[p]; n.Type == File && n.Sparse {
			h, err := holes(filepath.Join(dir, filepath.FromSlash(p)))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			out[p] = h
		}
	}
	return out, nil
}

// ErrNoHoles is returned by Holes where the platform cannot see holes.
var ErrNoHoles = fmt.Errorf("resolvecheck: holes cannot be seen here: %w", errors.ErrUnsupported)
