package loopfs_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine/internal/loopfs"
)

func TestMount(t *testing.T) {
	for _, fstype := range []string{"xfs", "btrfs"} {
		t.Run(fstype, func(t *testing.T) {
			dir := loopfs.Mount(t, fstype)
			if err := os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}
