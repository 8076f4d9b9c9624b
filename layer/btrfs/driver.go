package btrfs

import "github.com/tinehq/tine/layer"

// Driver registers the btrfs backend: flat, and usable where the workspace
// and the state directory share a btrfs filesystem with subvolumes.
func Driver() layer.Driver {
	return layer.Driver{
		Name: "btrfs",
		New:  func() layer.Backend { return New() },
		Probe: func(path, dir string) error {
			if err := layer.SameFilesystem(path, dir); err != nil {
				return err
			}
			return Probe(dir)
		},
	}
}
