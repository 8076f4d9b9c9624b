package reflink

import "github.com/tinehq/tine/layer"

// Driver registers the reflink backend: flat, and usable where the
// workspace and the state directory share a filesystem that clones files.
func Driver() layer.Driver {
	return layer.Driver{
		Name: "reflink",
		New:  func() layer.Backend { return New() },
		Probe: func(path, dir string) error {
			if err := layer.SameFilesystem(path, dir); err != nil {
				return err
			}
			return Probe(dir)
		},
	}
}
