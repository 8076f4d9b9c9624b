package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/layer"
)

var probeMu sync.Mutex

// probeCached runs probe once per backend and filesystem and remembers the
// answer in the state directory, so later commands need not try again.
func (e *Engine) probeCached(name, path, dir string) error {
	probeMu.Lock()
	defer probeMu.Unlock()
	dev, err := layer.Device(path)
	if err != nil {
		return err
	}
	file := e.lay.Probes()
	cache := map[string]string{}
	if b, err := os.ReadFile(file); err == nil {
		json.Unmarshal(b, &cache)
	}
	key := fmt.Sprintf("%s@%d/uid%d", name, dev, os.Geteuid())
	if v, ok := cache[key]; ok {
		if v == "" {
			return nil
		}
		return fmt.Errorf("%s (remembered from an earlier probe): %w", v, tine.ErrUnsupported)
	}
	perr := e.probe(name, path, dir)
	cache[key] = ""
	if perr != nil {
		cache[key] = perr.Error()
	}
	if b, err := json.Marshal(cache); err == nil {
		writeFileAtomic(file, b)
	}
	return perr
}
