package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/atomicfile"
	"github.com/tinehq/tine/layer"
)

// registry is the file backends registered with the engine (WithBackends),
// in the order auto tries them, and what probing them here found.
type registry struct {
	drivers layer.Drivers
	probes  string // the file remembering probes (layout.Probes)
}

// make makes the registered backend called name.
func (b registry) make(name string) (layer.Backend, error) {
	d, err := b.drivers.Lookup(name)
	if err != nil {
		return nil, err
	}
	return d.New(), nil
}

// stacking reports whether backend name stacks delta layers and mounts
// views (so the source's view is bound onto the workspace path) rather than
// keeping whole trees.
func (b registry) stacking(name string) bool {
	d, err := b.drivers.Lookup(name)
	return err == nil && d.Stacking
}

// probe tries backend name for a workspace at path with its state under
// dir. It returns nil when the backend works there.
func (b registry) probe(name, path, dir string) error {
	d, err := b.drivers.Lookup(name)
	if err != nil || d.Probe == nil {
		return err
	}
	return d.Probe(path, dir)
}

var probeMu sync.Mutex

// probeCached runs probe once per backend and filesystem and remembers the
// answer in the state directory, so later commands need not try again.
func (b registry) probeCached(name, path, dir string) error {
	probeMu.Lock()
	defer probeMu.Unlock()
	dev, err := layer.Device(path)
	if err != nil {
		return err
	}
	cache := map[string]string{}
	if data, err := os.ReadFile(b.probes); err == nil {
		json.Unmarshal(data, &cache)
	}
	key := fmt.Sprintf("%s@%d/uid%d", name, dev, os.Geteuid())
	if v, ok := cache[key]; ok {
		if v == "" {
			return nil
		}
		return fmt.Errorf("%s (remembered from an earlier probe): %w", v, tine.ErrUnsupported)
	}
	perr := b.probe(name, path, dir)
	cache[key] = ""
	if perr != nil {
		cache[key] = perr.Error()
	}
	if data, err := json.Marshal(cache); err == nil {
		atomicfile.Write(b.probes, data, 0o644)
	}
	return perr
}
