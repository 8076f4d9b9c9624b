package fstree_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// entry is everything a test checks of one path after a copy.
type entry struct {
	mode     fs.FileMode
	content  string // file bytes or symlink target
	rdev     uint64
	uid, gid uint32
	mtime    time.Time
	inode    uint64
	xattrs   map[string]string
}

// snapshot records every path under root (relative, root itself as ".").
func snapshot(t *testing.T, root string) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = entryOf(t, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// entryOf describes path p.
func entryOf(t *testing.T, p string) entry {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	e := entry{mode: fi.Mode(), uid: st.Uid, gid: st.Gid, mtime: fi.ModTime(),
		inode: uint64(st.Ino), rdev: uint64(st.Rdev), xattrs: xattrsOf(t, p)}
	switch fi.Mode().Type() {
	case 0:
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		e.content = string(b)
	case fs.ModeSymlink:
		e.content, _ = os.Readlink(p)
	}
	return e
}

// checkSameTree fails t unless dst holds what src holds, hard links
// included (paths sharing an inode in src share one in dst).
func checkSameTree(t *testing.T, src, dst string) {
	t.Helper()
	want, got := snapshot(t, src), snapshot(t, dst)
	links := map[uint64]uint64{}
	for p, w := range want {
		g, ok := got[p]
		if !ok {
			t.Errorf("%s: missing in copy", p)
			continue
		}
		if prev, ok := links[w.inode]; ok && prev != g.inode {
			t.Errorf("%s: hard link not kept", p)
		}
		links[w.inode] = g.inode
		w.inode, g.inode = 0, 0
		if !equalEntry(w, g) {
			t.Errorf("%s:\n got %+v\nwant %+v", p, g, w)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: extra in copy", p)
		}
	}
}

// equalEntry compares two entries field by field.
func equalEntry(a, b entry) bool {
	if len(a.xattrs) != len(b.xattrs) {
		return false
	}
	for k, v := range a.xattrs {
		if b.xattrs[k] != v {
			return false
		}
	}
	a.xattrs, b.xattrs = nil, nil
	return a.mode == b.mode && a.content == b.content && a.rdev == b.rdev &&
		a.uid == b.uid && a.gid == b.gid && a.mtime.Equal(b.mtime)
}

// write creates file p (and its parents) with content and perm.
func write(t testing.TB, p, content string, perm fs.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
}

// must fails t on err.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// stamp is a fixed time with nanoseconds, to see that times are kept exactly.
var stamp = time.Date(2021, 3, 4, 5, 6, 7, 123456789, time.UTC)

// buildTree fills root with a bit of everything portable: nested dirs,
// files with odd modes, symlinks (dangling, to a dir, absolute), hard links,
// a read-only dir with contents, and exact times.
func buildTree(t *testing.T, root string) {
	t.Helper()
	write(t, filepath.Join(root, "a.txt"), "alpha", 0o644)
	write(t, filepath.Join(root, "bin/tool"), "#!/bin/sh\n", 0o755|fs.ModeSetuid)
	write(t, filepath.Join(root, "d/e/f.txt"), "deep", 0o600)
	write(t, filepath.Join(root, "empty"), "", 0o640)
	must(t, os.Link(filepath.Join(root, "a.txt"), filepath.Join(root, "d/a-link")))
	must(t, os.Symlink("e/f.txt", filepath.Join(root, "d/rel")))
	must(t, os.Symlink("/nonexistent/target", filepath.Join(root, "dangling")))
	must(t, os.Symlink("d", filepath.Join(root, "dir-link")))
	must(t, os.Mkdir(filepath.Join(root, "tmp"), 0o755))
	must(t, os.Chmod(filepath.Join(root, "tmp"), 0o777|fs.ModeSticky))
	write(t, filepath.Join(root, "ro/inside"), "x", 0o444)
	must(t, os.Chmod(filepath.Join(root, "ro"), 0o555))
	must(t, os.Chtimes(filepath.Join(root, "a.txt"), stamp, stamp))
	must(t, os.Chtimes(filepath.Join(root, "d/e"), stamp, stamp))
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(root, "ro"), 0o755) })
}
