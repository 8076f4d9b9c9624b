package reflink

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/layer/copyfs"
)

// Backend is a flat layer.Backend whose copies clone file data: the copy
// backend with FICLONE required, so a layer or view costs metadata only.
// Every path it is given (workspace, layers, views) must be on one
// filesystem that supports reflinks; check with Probe first. A clone that
// fails is an error, never a silent byte copy.
type Backend struct {
	*copyfs.Backend
}

var _ layer.Backend = (*Backend)(nil)

// New returns a reflink backend.
func New() *Backend {
	opt := fstree.CopyOptions{Reflink: true, RequireReflink: true}
	return &Backend{copyfs.New(copyfs.WithName("reflink"), copyfs.WithCopyOptions(opt))}
}

// Probe reports whether files in dir can be cloned, by cloning one in a
// temporary directory inside dir. It returns nil if they can and an error
// wrapping tine.ErrUnsupported if the filesystem refuses.
func Probe(dir string) error {
	tmp, err := os.MkdirTemp(dir, ".tine-reflink-probe-")
	if err != nil {
		return fmt.Errorf("reflink: probe: %w", err)
	}
	defer os.RemoveAll(tmp)
	src, dst := filepath.Join(tmp, "src"), filepath.Join(tmp, "dst")
	for _, d := range []string{src, dst} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return fmt.Errorf("reflink: probe: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("tine reflink probe\n"), 0o600); err != nil {
		return fmt.Errorf("reflink: probe: %w", err)
	}
	opt := fstree.CopyOptions{Reflink: true, RequireReflink: true}
	if err := fstree.Copy(context.Background(), src, dst, opt); err != nil {
		return fmt.Errorf("reflink: no FICLONE in %s: %w: %w", dir, tine.ErrUnsupported, err)
	}
	return nil
}
