package fstree_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tinehq/tine/fstree"
)

// churn changes dir until stop is closed, the way git gc and an agent
// change a live workspace: loose object directories appear and vanish,
// files are replaced by rename, entries change type. Every file it puts in
// place holds "<its path relative to dir>:<generation>", and every symlink
// points at "to:<its path>", so a copy can be checked for entries that were
// never there.
func churn(dir string, stop <-chan struct{}) error {
	tmp := filepath.Join(filepath.Dir(dir), "churn-tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	put := func(rel string, gen int) error {
		t := filepath.Join(tmp, "f")
		if err := os.WriteFile(t, []byte(fmt.Sprintf("%s:%d", rel, gen)), 0o644); err != nil {
			return err
		}
		return os.Rename(t, filepath.Join(dir, rel))
	}
	for gen := 0; ; gen++ {
		select {
		case <-stop:
			return nil
		default:
		}
		obj := fmt.Sprintf("objects/%02x", gen%16)
		if err := os.MkdirAll(filepath.Join(dir, obj), 0o755); err != nil {
			return err
		}
		for i := range 4 {
			if err := put(fmt.Sprintf("%s/o%d", obj, i), gen); err != nil {
				return err
			}
		}
		if err := os.RemoveAll(filepath.Join(dir, fmt.Sprintf("objects/%02x", (gen+8)%16))); err != nil {
			return err
		}
		swap := filepath.Join(dir, "swap")
		if err := os.RemoveAll(swap); err != nil {
			return err
		}
		var err error
		switch gen % 3 {
		case 0:
			err = put("swap", gen)
		case 1:
			err = os.Mkdir(swap, 0o755)
			if err == nil {
				err = put("swap/inner", gen)
			}
		case 2:
			err = os.Symlink("to:swap", swap)
		}
		if err != nil {
			return err
		}
	}
}

// checkChurned fails t unless every entry of dst could have been in src at
// some time: stable files exactly as written, churned files holding their
// own path, symlinks their own target.
func checkChurned(t *testing.T, dst string, stable map[string]string) {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dst, p)
		switch d.Type() {
		case fs.ModeSymlink:
			if target, _ := os.Readlink(p); target != "to:"+rel {
				t.Errorf("%s: symlink to %q, never in the source", rel, target)
			}
		case 0:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if want, ok := stable[rel]; ok {
				seen[rel] = true
				if string(b) != want {
					t.Errorf("%s: %q, want %q", rel, b, want)
				}
			} else if !strings.HasPrefix(string(b), rel+":") {
				t.Errorf("%s: holds %q, never in the source at that path", rel, b)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for rel := range stable {
		if !seen[rel] {
			t.Errorf("%s: stable file missing from the copy", rel)
		}
	}
}

// TestCopy_SkipVanishedUnderChurn is the regression test for issue 18 item
// 5 (a fork failing with "lstat .../.git/objects/1a: no such file or
// directory" while git gc ran): Copy with SkipVanished, many times over,
// of a tree a goroutine keeps changing, never fails, and copies only what
// was there.
func TestCopy_SkipVanishedUnderChurn(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "src")
	stable := map[string]string{}
	for i := range 200 {
		rel := fmt.Sprintf("stable/d%d/f%d", i%10, i)
		stable[rel] = "stable " + rel
		write(t, filepath.Join(src, rel), stable[rel], 0o644)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var churnErr error
	wg.Go(func() { churnErr = churn(src, stop) })
	iterations := 100
	if testing.Short() {
		iterations = 30
	}
	for i := range iterations {
		dst := filepath.Join(root, fmt.Sprintf("dst%d", i))
		must(t, os.Mkdir(dst, 0o755))
		if err := fstree.Copy(context.Background(), src, dst, fstree.CopyOptions{SkipVanished: true}); err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("iteration %d: %v", i, err)
		}
		checkChurned(t, dst, stable)
		must(t, os.RemoveAll(dst))
	}
	close(stop)
	wg.Wait()
	must(t, churnErr)
}
