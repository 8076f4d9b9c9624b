package engine

import "github.com/tinehq/tine/layer"

// newBackend makes the registered backend called name.
func (e *Engine) newBackend(name string) (layer.Backend, error) {
	d, err := e.drivers.Lookup(name)
	if err != nil {
		return nil, err
	}
	return d.New(), nil
}

// stacking reports whether backend name stacks delta layers and mounts
// views (so the source's view is bound onto the workspace path) rather than
// keeping whole trees.
func (e *Engine) stacking(name string) bool {
	d, err := e.drivers.Lookup(name)
	return err == nil && d.Stacking
}

// probe tries backend name for a workspace at path with its state under
// dir. It returns nil when the backend works there.
func (e *Engine) probe(name, path, dir string) error {
	d, err := e.drivers.Lookup(name)
	if err != nil || d.Probe == nil {
		return err
	}
	return d.Probe(path, dir)
}
