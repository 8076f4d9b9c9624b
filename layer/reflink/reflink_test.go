package reflink_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/loopfs"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/layer/layertest"
	"github.com/tinehq/tine/layer/reflink"
)

func TestBackend(t *testing.T) {
	layertest.Run(t, func(*testing.T) layer.Backend { return reflink.New() },
		layertest.WithRoot(func(t *testing.T) string { return loopfs.Mount(t, "xfs") }))
}

func TestBackend_Name(t *testing.T) {
	if got := reflink.New().Name(); got != "reflink" {
		t.Errorf("Name = %q, want reflink", got)
	}
}

func TestProbe(t *testing.T) {
	for _, fstype := range []string{"xfs", "btrfs"} {
		t.Run(fstype, func(t *testing.T) {
			dir := loopfs.Mount(t, fstype)
			if err := reflink.Probe(dir); err != nil {
				t.Fatalf("Probe on %s: %v", fstype, err)
			}
			if names, _ := os.ReadDir(dir); len(names) != 0 {
				t.Errorf("Probe left %v behind", names)
			}
		})
	}
}

func TestProbe_Unsupported(t *testing.T) {
	t.Run("ext4", func(t *testing.T) {
		err := reflink.Probe(loopfs.Mount(t, "ext4"))
		if !errors.Is(err, tine.ErrUnsupported) {
			t.Fatalf("Probe on ext4: got %v, want ErrUnsupported", err)
		}
	})
	t.Run("TempDir", func(t *testing.T) {
		err := reflink.Probe(t.TempDir())
		if err == nil {
			t.Skip("the test temp dir supports reflinks")
		}
		if !errors.Is(err, tine.ErrUnsupported) {
			t.Fatalf("got %v, want ErrUnsupported", err)
		}
		t.Log(err)
	})
}

func TestProbe_MissingDir(t *testing.T) {
	err := reflink.Probe(filepath.Join(t.TempDir(), "missing"))
	if err == nil || errors.Is(err, tine.ErrUnsupported) {
		t.Fatalf("Probe of a missing dir: got %v, want a plain error", err)
	}
}
