package layertest

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Node types of a fixture tree. Hard links are written as hardlinkType and
// read back as the file they name.
const (
	fileType     = "file"
	dirType      = "dir"
	symlinkType  = "symlink"
	fifoType     = "fifo"
	hardlinkType = "hardlink"
)

// node is one entry of a tree: what a path must hold. Mode is the permission
// bits (0 for symlinks); Data a file's content, summarised when long; Target
// a symlink's target, or the path a hard link shares its inode with.
type node struct {
	Type   string
	Mode   fs.FileMode
	Data   string
	Target string
}

// tree maps slash-separated paths, relative to a view, to what they hold.
// Directories that are not listed but lead to a listed path are implied,
// with mode 0755.
type tree map[string]node

// fixedTime is the modification time every fixture file is written with, so
// that a later rewrite of the same size has a different time even on a
// backend whose diff trusts metadata.
var fixedTime = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)

// file is a regular file holding data, mode 0644.
func file(data string) node { return node{Type: fileType, Mode: 0o644, Data: data} }

// fileMode is a regular file holding data with permission bits mode.
func fileMode(data string, mode fs.FileMode) node {
	return node{Type: fileType, Mode: mode, Data: data}
}

// dir is a directory, mode 0755.
func dir() node { return node{Type: dirType, Mode: 0o755} }

// dirMode is a directory with permission bits mode.
func dirMode(mode fs.FileMode) node { return node{Type: dirType, Mode: mode} }

// symlink is a symbolic link to target.
func symlink(target string) node { return node{Type: symlinkType, Target: target} }

// fifo is a named pipe with permission bits mode.
func fifo(mode fs.FileMode) node { return node{Type: fifoType, Mode: mode} }

// hardlink is a second name of the file at path target (slash-separated,
// relative to the same root).
func hardlink(target string) node { return node{Type: hardlinkType, Target: target} }

// with returns a copy of tr with the entries of over added or replacing.
func (tr tree) with(over tree) tree {
	out := make(tree, len(tr)+len(over))
	for p, n := range tr {
		out[p] = n
	}
	for p, n := range over {
		out[p] = n
	}
	return out
}

// without returns a copy of tr without paths and everything beneath them.
func (tr tree) without(paths ...string) tree {
	out := make(tree, len(tr))
	for p, n := range tr {
		if !slices.ContainsFunc(paths, func(q string) bool { return p == q || strings.HasPrefix(p, q+"/") }) {
			out[p] = n
		}
	}
	return out
}

// expand returns tr with its implied parent directories listed.
func (tr tree) expand() tree {
	out := tr.with(nil)
	for p := range tr {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if _, ok := out[d]; !ok {
				out[d] = dir()
			}
		}
	}
	return out
}

// linked returns what tr must read as: hard links replaced by the file they
// name.
func (tr tree) linked(t *testing.T) tree {
	t.Helper()
	out := tr.expand()
	for p, n := range out {
		if n.Type == hardlinkType {
			target, ok := out[n.Target]
			if !ok || target.Type != fileType {
				t.Fatalf("fixture: hard link %q names %q, which is not a file of the tree", p, n.Target)
			}
			out[p] = target
		}
	}
	for p, n := range out {
		out[p] = summarise(n)
	}
	return out
}

// create creates tr under root, which exists: parents first, hard links after
// their targets, permission bits last so that read-only directories can be
// filled.
func (tr tree) create(t *testing.T, root string) {
	t.Helper()
	all := tr.expand()
	paths := slices.Sorted(func(yield func(string) bool) {
		for p := range all {
			if !yield(p) {
				return
			}
		}
	})
	for _, p := range paths {
		if n := all[p]; n.Type != hardlinkType {
			put(p, n)(t, root)
		}
	}
	for _, p := range paths {
		if n := all[p]; n.Type == hardlinkType {
			put(p, n)(t, root)
		}
	}
	for _, p := range slices.Backward(paths) {
		n := all[p]
		full := filepath.Join(root, filepath.FromSlash(p))
		if n.Type == dirType {
			if err := os.Chmod(full, n.Mode); err != nil {
				t.Fatalf("fixture: %v", err)
			}
		}
	}
}

// summaryLimit is the length above which file contents are compared, and
// shown in diffs, by size and digest.
const summaryLimit = 512

// summarise shortens a long file content to its size and digest.
func summarise(n node) node {
	if n.Type == fileType && len(n.Data) > summaryLimit {
		n.Data = fmt.Sprintf("<%d bytes, sha256 %x>", len(n.Data), sha256.Sum256([]byte(n.Data)))
	}
	return n
}

// readTree walks root without following symbolic links and returns what it
// holds; root itself is not part of the tree.
func readTree(t *testing.T, root string) tree {
	t.Helper()
	out := tree{}
	err := filepath.WalkDir(root, func(full string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, full)
		if err != nil || rel == "." {
			return err
		}
		n, err := readNode(full)
		if err != nil {
			return err
		}
		out[filepath.ToSlash(rel)] = n
		return nil
	})
	if err != nil {
		t.Fatalf("read tree %s: %v", root, err)
	}
	return out
}

// readNode reads what the path full holds, without following a symlink.
func readNode(full string) (node, error) {
	fi, err := os.Lstat(full)
	if err != nil {
		return node{}, err
	}
	perm := fi.Mode().Perm()
	switch fi.Mode().Type() {
	case 0:
		h := sha256.New()
		f, err := os.Open(full)
		if err != nil {
			return node{}, err
		}
		defer f.Close()
		var head strings.Builder
		if _, err := io.Copy(io.MultiWriter(h, &limitWriter{&head, summaryLimit + 1}), f); err != nil {
			return node{}, err
		}
		if fi.Size() > summaryLimit {
			return node{Type: fileType, Mode: perm, Data: fmt.Sprintf("<%d bytes, sha256 %x>", fi.Size(), h.Sum(nil))}, nil
		}
		return node{Type: fileType, Mode: perm, Data: head.String()}, nil
	case fs.ModeDir:
		return node{Type: dirType, Mode: perm}, nil
	case fs.ModeSymlink:
		target, err := os.Readlink(full)
		return node{Type: symlinkType, Target: target}, err
	case fs.ModeNamedPipe:
		return node{Type: fifoType, Mode: perm}, nil
	}
	return node{Type: "other " + fi.Mode().Type().String(), Mode: perm}, nil
}

// limitWriter keeps the first n bytes written to it and discards the rest.
type limitWriter struct {
	w *strings.Builder
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if room := l.n - l.w.Len(); room > 0 {
		l.w.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// checkTree fails t unless dir holds exactly want: the same paths, types,
// permission bits, contents and link targets, and hard links where want has
// them.
func checkTree(t *testing.T, what, dir string, want tree) {
	t.Helper()
	got := readTree(t, dir)
	if diff := cmp.Diff(want.linked(t), got); diff != "" {
		t.Errorf("%s (%s) differs from what it must hold (-want +got):\n%s", what, dir, diff)
	}
	for p, n := range want.expand() {
		if n.Type != hardlinkType {
			continue
		}
		a, errA := os.Lstat(filepath.Join(dir, filepath.FromSlash(p)))
		b, errB := os.Lstat(filepath.Join(dir, filepath.FromSlash(n.Target)))
		if errA == nil && errB == nil && !os.SameFile(a, b) {
			t.Errorf("%s: %q and %q must be hard links of one file, they are two files", what, p, n.Target)
		}
	}
}

// op changes the files under a directory, as a program in a run would.
type op func(t *testing.T, root string)

// apply runs ops in order against the directory root.
func apply(t *testing.T, root string, ops ...op) {
	t.Helper()
	for _, o := range ops {
		o(t, root)
	}
}

// at joins a slash-separated relative path to root.
func at(root, p string) string { return filepath.Join(root, filepath.FromSlash(p)) }

// put makes p hold n: a file is written in place when it exists (keeping
// its inode, as an editor saving in place would) and otherwise created with
// modification time fixedTime, a symlink replaces what was there, a
// directory, fifo or hard link is created.
func put(p string, n node) op {
	return func(t *testing.T, root string) {
		t.Helper()
		full := at(root, p)
		var err error
		switch n.Type {
		case fileType:
			_, existed := os.Lstat(full)
			err = os.WriteFile(full, []byte(n.Data), n.Mode)
			if err == nil {
				err = os.Chmod(full, n.Mode)
			}
			if err == nil && existed != nil {
				err = os.Chtimes(full, fixedTime, fixedTime)
			}
		case dirType:
			err = os.Mkdir(full, 0o755)
			if err == nil {
				err = os.Chmod(full, n.Mode)
			}
		case symlinkType:
			if err = os.Remove(full); errors.Is(err, fs.ErrNotExist) {
				err = nil
			}
			if err == nil {
				err = os.Symlink(n.Target, full)
			}
		case fifoType:
			err = mkfifo(full, uint32(n.Mode))
			if errors.Is(err, errors.ErrUnsupported) {
				t.Skip("named pipes are not supported on this platform")
			}
			if err == nil {
				err = os.Chmod(full, n.Mode)
			}
		case hardlinkType:
			err = os.Link(at(root, n.Target), full)
		default:
			err = fmt.Errorf("unknown node type %q", n.Type)
		}
		if err != nil {
			t.Fatalf("put %q: %v", p, err)
		}
	}
}

// write writes data into the existing file p in place (same inode).
func write(p, data string) op {
	return func(t *testing.T, root string) {
		t.Helper()
		f, err := os.OpenFile(at(root, p), os.O_WRONLY|os.O_TRUNC, 0)
		if err == nil {
			_, err = f.WriteString(data)
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			t.Fatalf("write %q: %v", p, err)
		}
	}
}

// remove deletes p and everything beneath it.
func remove(p string) op {
	return func(t *testing.T, root string) {
		t.Helper()
		if _, err := os.Lstat(at(root, p)); err != nil {
			t.Fatalf("remove %q: %v", p, err)
		}
		if err := os.RemoveAll(at(root, p)); err != nil {
			t.Fatalf("remove %q: %v", p, err)
		}
	}
}

// chmod sets p's permission bits and nothing else.
func chmod(p string, mode fs.FileMode) op {
	return func(t *testing.T, root string) {
		t.Helper()
		if err := os.Chmod(at(root, p), mode); err != nil {
			t.Fatalf("chmod %q: %v", p, err)
		}
	}
}

// rename moves from to to like mv: rename(2), and when the view refuses to
// rename a directory across its layers (EXDEV, overlay without
// redirect_dir), a copy followed by a removal.
func rename(from, to string) op {
	return func(t *testing.T, root string) {
		t.Helper()
		src, dst := at(root, from), at(root, to)
		err := os.Rename(src, dst)
		if errors.Is(err, syscall.EXDEV) {
			if err = copyAll(src, dst); err == nil {
				err = os.RemoveAll(src)
			}
		}
		if err != nil {
			t.Fatalf("rename %q to %q: %v", from, to, err)
		}
	}
}

// copyAll copies the tree at src to dst (which does not exist) the way mv
// does across filesystems: types, permission bits, contents and targets.
func copyAll(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		n, err := readNode(p)
		if err != nil {
			return err
		}
		if n.Type == fileType {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			n.Data = string(data)
		}
		var fail error
		target := filepath.Join(dst, rel)
		switch n.Type {
		case fileType:
			fail = os.WriteFile(target, []byte(n.Data), 0o600)
		case dirType:
			fail = os.Mkdir(target, 0o700)
		case symlinkType:
			return os.Symlink(n.Target, target)
		case fifoType:
			fail = mkfifo(target, 0o600)
		default:
			return fmt.Errorf("copy %s: cannot copy a %s", p, n.Type)
		}
		if fail != nil {
			return fail
		}
		return os.Chmod(target, n.Mode)
	})
}
