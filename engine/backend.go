package engine

import (
	"fmt"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/layer/btrfs"
	"github.com/tinehq/tine/layer/copyfs"
	"github.com/tinehq/tine/layer/overlay"
	"github.com/tinehq/tine/layer/reflink"
)

// Backends lists the backend names in the order auto tries them.
var Backends = []string{"overlay", "btrfs", "reflink", "copy"}

func newBackend(name string) (layer.Backend, error) {
	switch name {
	case "overlay":
		return overlay.New(), nil
	case "btrfs":
		return btrfs.New(), nil
	case "reflink":
		return reflink.New(), nil
	case "copy":
		return copyfs.New(), nil
	}
	return nil, fmt.Errorf("unknown backend %q (want auto, %s): %w", name, "overlay, btrfs, reflink or copy", tine.ErrInvalid)
}

// stacking reports whether a backend stacks delta layers and mounts views
// (so the source's view is bound onto the workspace path) rather than
// keeping whole trees.
func stacking(name string) bool { return name == "overlay" }

// probe tries backend name for a workspace at path with its state under
// dir. It returns nil when the backend works there.
func probe(name, path, dir string) error {
	switch name {
	case "overlay":
		return overlay.Probe(dir)
	case "btrfs":
		if err := sameFilesystem(path, dir); err != nil {
			return err
		}
		return btrfs.Probe(dir)
	case "reflink":
		if err := sameFilesystem(path, dir); err != nil {
			return err
		}
		return reflink.Probe(dir)
	case "copy":
		return nil
	}
	_, err := newBackend(name)
	return err
}
