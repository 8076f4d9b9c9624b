//go:build unix

package fstree

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// copyWithHook copies src into the empty dst with SkipVanished set to skip,
// running change on each source entry after its lstat.
func copyWithHook(t *testing.T, src, dst string, skip bool, change func(path string)) error {
	t.Helper()
	c := &copier{ctx: context.Background(), opt: CopyOptions{SkipVanished: skip},
		root: os.Geteuid() == 0, links: map[inodeKey]string{}, afterLstat: change}
	return c.copyRoot(src, dst)
}

// once returns a hook that runs fn the first time it sees path.
func once(path string, fn func()) func(string) {
	done := false
	return func(p string) {
		if p == path && !done {
			done = true
			fn()
		}
	}
}

// mustT fails t on err.
func mustT(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCopyEntry_Vanished: an entry removed between its lstat and its copy
// (as git gc removes a loose object directory) fails Copy with ENOENT, the
// error of issue 18, unless SkipVanished is set; then it is left out and the
// rest is copied.
func TestCopyEntry_Vanished(t *testing.T) {
	for _, tc := range []struct {
		name   string
		make   func(t *testing.T, p string)
		remove func(p string) error
	}{
		{"File", func(t *testing.T, p string) { mustT(t, os.WriteFile(p, []byte("x"), 0o644)) }, os.Remove},
		{"Dir", func(t *testing.T, p string) {
			mustT(t, os.MkdirAll(filepath.Join(p, "sub"), 0o755))
			mustT(t, os.WriteFile(filepath.Join(p, "sub", "f"), []byte("x"), 0o644))
		}, os.RemoveAll},
		{"Symlink", func(t *testing.T, p string) { mustT(t, os.Symlink("target", p)) }, os.Remove},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, skip := range []bool{false, true} {
				src, dst := t.TempDir(), t.TempDir()
				mustT(t, os.WriteFile(filepath.Join(src, "stays"), []byte("s"), 0o644))
				gone := filepath.Join(src, "gone")
				tc.make(t, gone)
				err := copyWithHook(t, src, dst, skip, once(gone, func() { mustT(t, tc.remove(gone)) }))
				if !skip {
					if !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("without SkipVanished: %v, want ENOENT", err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("with SkipVanished: %v", err)
				}
				if _, err := os.Lstat(filepath.Join(dst, "gone")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("vanished entry copied anyway: %v", err)
				}
				if b, err := os.ReadFile(filepath.Join(dst, "stays")); err != nil || string(b) != "s" {
					t.Errorf("stays = %q, %v", b, err)
				}
			}
		})
	}
}

// TestCopyEntry_Replaced: an entry replaced by another type between its
// lstat and its copy is looked at again and copied as what it is now; a
// file replaced by a symlink is never followed, nor a fifo opened for
// reading blocks.
func TestCopyEntry_Replaced(t *testing.T) {
	outside := t.TempDir()
	mustT(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644))
	for _, tc := range []struct {
		name    string
		make    func(p string) error
		replace func(p string) error
		want    fs.FileMode
	}{
		{"FileBySymlink", func(p string) error { return os.WriteFile(p, []byte("x"), 0o644) },
			func(p string) error {
				return replace(p, func() error { return os.Symlink(filepath.Join(outside, "secret"), p) })
			},
			fs.ModeSymlink},
		{"FileByFifo", func(p string) error { return os.WriteFile(p, []byte("x"), 0o644) },
			func(p string) error { return replace(p, func() error { return syscall.Mkfifo(p, 0o644) }) },
			fs.ModeNamedPipe},
		{"FileByDir", func(p string) error { return os.WriteFile(p, []byte("x"), 0o644) },
			func(p string) error { return replace(p, func() error { return os.Mkdir(p, 0o755) }) },
			fs.ModeDir},
		{"DirByFile", func(p string) error { return os.Mkdir(p, 0o755) },
			func(p string) error {
				return replace(p, func() error { return os.WriteFile(p, []byte("now a file"), 0o644) })
			},
			0},
		{"DirBySymlink", func(p string) error { return os.Mkdir(p, 0o755) },
			func(p string) error { return replace(p, func() error { return os.Symlink(outside, p) }) },
			fs.ModeSymlink},
		{"SymlinkByFile", func(p string) error { return os.Symlink("t", p) },
			func(p string) error { return replace(p, func() error { return os.WriteFile(p, []byte("f"), 0o644) }) },
			0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			p := filepath.Join(src, "e")
			mustT(t, tc.make(p))
			done := make(chan error, 1)
			go func() {
				done <- copyWithHook(t, src, dst, true, once(p, func() { mustT(t, tc.replace(p)) }))
			}()
			select {
			case err := <-done:
				mustT(t, err)
			case <-time.After(10 * time.Second):
				t.Fatal("Copy blocked (on a fifo?)")
			}
			fi, err := os.Lstat(filepath.Join(dst, "e"))
			mustT(t, err)
			if fi.Mode().Type() != tc.want {
				t.Errorf("copied as %v, want %v", fi.Mode().Type(), tc.want)
			}
			if tc.want == fs.ModeSymlink {
				if _, err := os.Lstat(filepath.Join(dst, "e", "secret")); err == nil && fi.IsDir() {
					t.Error("followed the symlink")
				}
			}
			if fi.Mode().IsRegular() {
				if b, _ := os.ReadFile(filepath.Join(dst, "e")); string(b) == "secret" {
					t.Error("copied the symlink's target")
				}
			}
		})
	}
}

// replace removes p and runs create in its place.
func replace(p string, create func() error) error {
	if err := os.RemoveAll(p); err != nil {
		return err
	}
	return create()
}

// TestCopy_RootVanished: SkipVanished forgives entries below the root, not
// a missing root.
func TestCopy_RootVanished(t *testing.T) {
	err := Copy(context.Background(), filepath.Join(t.TempDir(), "none"), t.TempDir(), CopyOptions{SkipVanished: true})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Copy of a missing root: %v, want ENOENT", err)
	}
}

// TestCopy_SkipVanishedKeepsRealErrors: an unreadable file still fails a
// copy with SkipVanished.
func TestCopy_SkipVanishedKeepsRealErrors(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads files whatever their mode")
	}
	src := t.TempDir()
	mustT(t, os.WriteFile(filepath.Join(src, "locked"), []byte("x"), 0o000))
	err := Copy(context.Background(), src, t.TempDir(), CopyOptions{SkipVanished: true})
	if !errors.Is(err, fs.ErrPermission) {
		t.Errorf("Copy of an unreadable file: %v, want EACCES", err)
	}
}
