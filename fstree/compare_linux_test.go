package fstree_test

import (
	"path/filepath"
	"testing"

	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/testkit"
	"golang.org/x/sys/unix"
)

func TestSamePath_Devices(t *testing.T) {
	testkit.RequireRoot(t, "mknod of a character device")
	root := t.TempDir()
	mk := func(name string, dev uint64) string {
		p := filepath.Join(root, name)
		must(t, unix.Mknod(p, unix.S_IFCHR, int(dev)))
		return p
	}
	w1, w2, null := mk("w1", 0), mk("w2", 0), mk("null", unix.Mkdev(1, 3))
	for _, c := range []struct {
		a, b string
		same bool
	}{{w1, w2, true}, {w1, null, false}} {
		got, err := fstree.SamePath(c.a, c.b)
		must(t, err)
		if got != c.same {
			t.Errorf("SamePath(%s, %s) = %v, want %v", c.a, c.b, got, c.same)
		}
	}
}
