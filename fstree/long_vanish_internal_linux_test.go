package fstree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCopy_VanishedBelowLongPath: with SkipVanished, an entry below a path
// longer than PATH_MAX that disappears between its lstat and its copy is
// left out, as at a short path, both when the entry itself goes and when
// a directory high in the chain (inside a chunk the resolver opens) is
// renamed away; without SkipVanished Copy fails.
func TestCopy_VanishedBelowLongPath(t *testing.T) {
	for _, tc := range []struct {
		name  string
		at    string // the entry whose lstat triggers the change
		moved string // what is renamed away, relative to the source
	}{
		{"Entry", "gone", "gone"},
		{"ChunkAbove", "gone", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, dst := t.TempDir(), t.TempDir()
			names := make([]string, 23)
			for i := range names {
				names[i] = fmt.Sprintf("d%02d", i) + strings.Repeat("x", 197)
			}
			chain := src
			for _, n := range names {
				chain = filepath.Join(chain, n)
				mustT(t, Mkdir(chain, 0o755))
			}
			mustT(t, Mkdir(filepath.Join(chain, "gone"), 0o755))
			f, err := OpenFile(filepath.Join(chain, "gone", "f"), os.O_WRONLY|os.O_CREATE, 0o644)
			mustT(t, err)
			f.Close()
			from := filepath.Join(chain, tc.moved)
			if tc.moved == "" {
				from = filepath.Join(src, names[0], names[1]) // in the first chunk
			}
			hook := func() { mustT(t, Rename(from, filepath.Join(src, "away"))) }
			err = copyWithHook(t, src, dst, true, once(filepath.Join(chain, tc.at), hook))
			if err != nil {
				t.Fatalf("Copy with SkipVanished: %.300v", err)
			}
			if _, err := Lstat(filepath.Join(dst, names[0])); err != nil {
				t.Errorf("the chain's top is missing from the copy: %v", err)
			}
			mustT(t, Rename(filepath.Join(src, "away"), from))
			err = copyWithHook(t, src, t.TempDir(), false, once(filepath.Join(chain, tc.at), hook))
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Copy without SkipVanished: %.200v, want ErrNotExist", err)
			}
		})
	}
}
