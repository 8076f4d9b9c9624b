package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"syscall"

	"github.com/tinehq/tine"
)

func device(path string) (uint64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("%s: no device number", path)
	}
	return uint64(st.Dev), nil
}

// sameFilesystem returns nil when a and b are on one filesystem, which
// cloning and snapshots need.
func sameFilesystem(a, b string) error {
	da, err := device(a)
	if err != nil {
		return err
	}
	db, err := device(b)
	if err != nil {
		return err
	}
	if da != db {
		return fmt.Errorf("%s and the state directory %s are on different filesystems: %w", a, b, tine.ErrUnsupported)
	}
	return nil
}

var probeMu sync.Mutex

// probeCached runs probe once per backend and filesystem and remembers the
// answer in the state directory, so later commands need not try again.
func (e *Engine) probeCached(name, path, dir string) error {
	probeMu.Lock()
	defer probeMu.Unlock()
	dev, err := device(path)
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
	perr := probe(name, path, dir)
	cache[key] = ""
	if perr != nil {
		cache[key] = perr.Error()
	}
	if b, err := json.Marshal(cache); err == nil {
		writeFileAtomic(file, b)
	}
	return perr
}
