package atomicfile

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
)

// checkOnly fails t unless dir holds just the entries named want (no
// temporary file left behind).
func checkOnly(t *testing.T, dir string, want ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s holds %q, want %q", dir, got, want)
	}
}

// checkContent fails t unless the file at path holds want.
func checkContent(t *testing.T, path, want string) {
	t.Helper()
	if b, err := os.ReadFile(path); err != nil || string(b) != want {
		t.Errorf("%s holds %q (%v), want %q", path, b, err, want)
	}
}

func TestWriteReplaces(t *testing.T) {
	for _, opts := range [][]Option{nil, {Durable}, {Whole}, {Durable, ExactMode}} {
		t.Run(fmt.Sprint(opts), func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "f")
			if err := Write(p, []byte("old"), 0o644, opts...); err != nil {
				t.Fatal(err)
			}
			if err := Write(p, []byte("new"), 0o644, opts...); err != nil {
				t.Fatal(err)
			}
			checkContent(t, p, "new")
			checkOnly(t, dir, "f")
		})
	}
}

// The mode is perm less the umask, as os.WriteFile gives, unless ExactMode.
func TestWriteMode(t *testing.T) {
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	dir := t.TempDir()
	for _, c := range []struct {
		opts []Option
		want fs.FileMode
	}{{nil, 0o640}, {[]Option{ExactMode}, 0o666}, {[]Option{ExactMode}, 0o600}} {
		p := filepath.Join(dir, "f")
		perm := c.want
		if c.opts == nil {
			perm = 0o666
		}
		if err := Write(p, nil, perm, c.opts...); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != c.want {
			t.Errorf("Write(%o, %v): mode %o, want %o", perm, c.opts, fi.Mode().Perm(), c.want)
		}
	}
}

// A symbolic link at the path is replaced, its target left alone.
func TestWriteReplacesSymlink(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "target"), filepath.Join(dir, "link")
	if err := os.WriteFile(target, []byte("target"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	checkContent(t, target, "target")
	if fi, err := os.Lstat(link); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the link was not replaced by a file: %v %v", fi, err)
	}
	checkContent(t, link, "new")
}

// When the rename fails (a directory is at the path) nothing is left.
func TestWriteRenameFails(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "d")
	if err := os.MkdirAll(filepath.Join(p, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, []byte("new"), 0o644, Durable); err == nil {
		t.Fatal("Write over a directory succeeded")
	}
	checkOnly(t, dir, "d")
}

func TestWriteNoDirectory(t *testing.T) {
	err := Write(filepath.Join(t.TempDir(), "missing", "f"), nil, 0o644)
	if !os.IsNotExist(err) {
		t.Errorf("Write into a missing directory: %v, want not-exist", err)
	}
}

// Concurrent writers of one path each write their own temporary file: the
// result is one of them whole.
func TestWriteConcurrent(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if err := Write(p, bytes.Repeat([]byte{byte('a' + i)}, 64<<10), 0o644); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	b, err := os.ReadFile(p)
	if err != nil || len(b) != 64<<10 || !bytes.Equal(b, bytes.Repeat(b[:1], len(b))) {
		t.Errorf("the file is not one writer's whole content (%d bytes, %v)", len(b), err)
	}
	checkOnly(t, dir, "f")
}

func TestSyncDir(t *testing.T) {
	if err := SyncDir(t.TempDir()); err != nil {
		t.Error(err)
	}
	if err := SyncDir(filepath.Join(t.TempDir(), "missing")); !os.IsNotExist(err) {
		t.Errorf("SyncDir(missing) = %v, want not-exist", err)
	}
}

// WriteIn writes into the directory it was given, whatever its path names
// afterwards: here a symbolic link put in its place points elsewhere, and
// the write lands in the directory opened, not there.
func TestWriteIn_TheDirectoryOpened(t *testing.T) {
	top := t.TempDir()
	dir, elsewhere := filepath.Join(top, "d"), filepath.Join(top, "elsewhere")
	for _, d := range []string{dir, elsewhere} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	moved := filepath.Join(top, "moved")
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, dir); err != nil {
		t.Fatal(err)
	}
	if err := WriteIn(d, "f", []byte("x"), 0o600, -1, -1, ExactMode, Durable); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(moved, "f")); err != nil || string(b) != "x" {
		t.Errorf("the directory opened holds %q, %v", b, err)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("the write followed the path to %s: %v", elsewhere, ents)
	}
	if fi, err := os.Stat(filepath.Join(moved, "f")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v", fi.Mode(), err)
	}
	if ents, _ := os.ReadDir(moved); len(ents) != 1 {
		t.Errorf("a temporary file was left: %v", ents)
	}
}
