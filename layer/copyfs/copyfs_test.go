package copyfs_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/layer/copyfs"
	"github.com/tinehq/tine/layer/layertest"
)

func TestBackend(t *testing.T) {
	layertest.Run(t, func(*testing.T) layer.Backend { return copyfs.New() })
}

func TestBackend_NotFlat(t *testing.T) {
	b := copyfs.New()
	r := layer.Run{ID: "r", Dir: t.TempDir(), View: filepath.Join(t.TempDir(), "view")}
	err := b.Activate(context.Background(), r, []string{t.TempDir(), t.TempDir()})
	if !errors.Is(err, tine.ErrInvalid) {
		t.Fatalf("Activate with two layers: got %v, want ErrInvalid", err)
	}
	if _, err := os.Lstat(r.View); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("view left behind: %v", err)
	}
	if _, _, err := b.Read(context.Background(), nil, ""); !errors.Is(err, tine.ErrInvalid) {
		t.Errorf("Read with no layers: got %v, want ErrInvalid", err)
	}
}

func TestBackend_DeactivateTwice(t *testing.T) {
	ctx := context.Background()
	b := copyfs.New()
	r := layer.Run{ID: "r", Dir: t.TempDir(), View: filepath.Join(t.TempDir(), "view")}
	if err := os.WriteFile(filepath.Join(r.Dir, "state"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := b.Deactivate(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if names, _ := os.ReadDir(r.Dir); len(names) != 0 {
		t.Errorf("r.Dir still holds %v", names)
	}
}

func TestBackend_Name(t *testing.T) {
	if got := copyfs.New().Name(); got != "copy" {
		t.Errorf("Name = %q", got)
	}
	if got := copyfs.New(copyfs.WithName("x")).Name(); got != "x" {
		t.Errorf("Name with WithName = %q", got)
	}
}
