package fstree_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tinehq/tine/fstree"
)

func TestCopy(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	buildTree(t, src)
	must(t, os.Chmod(src, 0o750))
	must(t, fstree.Copy(context.Background(), src, dst, fstree.CopyOptions{}))
	checkSameTree(t, src, dst)
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(dst, "ro"), 0o755) })
}

func TestCopy_ReflinkFallback(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	buildTree(t, src)
	must(t, fstree.Copy(context.Background(), src, dst, fstree.CopyOptions{Reflink: true}))
	checkSameTree(t, src, dst)
	t.Cleanup(func() { _ = os.Chmod(filepath.Join(dst, "ro"), 0o755) })
}

func TestCopy_NotEmpty(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	write(t, filepath.Join(dst, "x"), "", 0o644)
	err := fstree.Copy(context.Background(), src, dst, fstree.CopyOptions{})
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Copy into non-empty dir: got %v, want fs.ErrExist", err)
	}
}

func TestCopy_SrcNotDir(t *testing.T) {
	src := filepath.Join(t.TempDir(), "file")
	write(t, src, "x", 0o644)
	if err := fstree.Copy(context.Background(), src, t.TempDir(), fstree.CopyOptions{}); err == nil {
		t.Fatal("Copy from a file: no error")
	}
}

func TestCopy_SymlinksNotFollowed(t *testing.T) {
	outside, src, dst := t.TempDir(), t.TempDir(), t.TempDir()
	write(t, filepath.Join(outside, "secret"), "s", 0o644)
	must(t, os.Symlink(outside, filepath.Join(src, "out")))
	must(t, os.Symlink(filepath.Join(outside, "secret"), filepath.Join(src, "file")))
	must(t, os.Symlink("loop", filepath.Join(src, "loop")))
	must(t, fstree.Copy(context.Background(), src, dst, fstree.CopyOptions{}))
	for _, name := range []string{"out", "file", "loop"} {
		fi, err := os.Lstat(filepath.Join(dst, name))
		if err != nil || fi.Mode().Type() != fs.ModeSymlink {
			t.Errorf("%s: want a symlink, got %v, %v", name, fi, err)
		}
	}
	checkSameTree(t, src, dst)
}

func TestCopy_Canceled(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	write(t, filepath.Join(src, "f"), "x", 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := fstree.Copy(ctx, src, dst, fstree.CopyOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestCopy_RequireReflinkUnsupported(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir() // ext4 or tmpfs: no FICLONE
	write(t, filepath.Join(src, "f"), "data", 0o644)
	err := fstree.Copy(context.Background(), src, dst, fstree.CopyOptions{Reflink: true, RequireReflink: true})
	if err == nil {
		t.Skip("the test temp dir supports reflinks; nothing to check")
	}
	t.Log(err)
}

// smallTree writes n files of 1 KiB spread over directories of 100.
func smallTree(tb testing.TB, root string, n int) {
	tb.Helper()
	data := make([]byte, 1024)
	for i := range n {
		dir := filepath.Join(root, fmt.Sprintf("d%03d", i/100))
		if i%100 == 0 {
			must(tb, os.Mkdir(dir, 0o755))
		}
		data[0] = byte(i)
		must(tb, os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), data, 0o644))
	}
}

// benchCopy copies a tree of 2,000 small files from src once per iteration.
func benchCopy(b *testing.B, src string, opt fstree.CopyOptions) {
	must(b, os.MkdirAll(src, 0o755))
	smallTree(b, src, 2000)
	work := filepath.Join(filepath.Dir(src), "bench-dst")
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		must(b, os.RemoveAll(work))
		must(b, os.Mkdir(work, 0o755))
		b.StartTimer()
		must(b, fstree.Copy(context.Background(), src, work, opt))
	}
}

func BenchmarkCopy(b *testing.B) {
	benchCopy(b, filepath.Join(b.TempDir(), "src"), fstree.CopyOptions{})
}
