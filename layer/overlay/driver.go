package overlay

import "github.com/tinehq/tine/layer"

// Driver registers the overlay backend: it stacks, and works where this
// machine and user can mount an overlay in the state directory.
func Driver() layer.Driver {
	return layer.Driver{
		Name:     "overlay",
		Stacking: true,
		New:      func() layer.Backend { return New() },
		Probe:    func(_, dir string) error { return Probe(dir) },
	}
}
