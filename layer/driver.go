package layer

import (
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/tinehq/tine"
)

// Driver is what a program registers of a backend: its name, whether it
// stacks, how to make one and how to find whether it works for a
// workspace. Each backend package returns its own (overlay.Driver(), ...);
// the engine is given the list, in the order "auto" tries them, and never
// names a backend itself.
type Driver struct {
	// Name is the backend's name as stored and shown, Backend.Name's.
	Name string
	// Stacking is true for a backend that stacks delta layers and mounts
	// every view, the source's included (it is bound onto the workspace
	// path); false for a flat one keeping whole trees, whose source's view
	// is the workspace directory itself.
	Stacking bool
	// New makes the backend.
	New func() Backend
	// Probe returns nil when the backend works for a workspace at path
	// whose layers and views live under dir, and an error saying why not
	// otherwise. Nil means the backend works everywhere.
	Probe func(path, dir string) error
}

// Drivers is a list of registered backends, in the order "auto" tries them.
type Drivers []Driver

// Lookup returns the driver called name, or an error wrapping
// tine.ErrInvalid that names the choices.
func (ds Drivers) Lookup(name string) (Driver, error) {
	for _, d := range ds {
		if d.Name == name {
			return d, nil
		}
	}
	return Driver{}, fmt.Errorf("unknown backend %q (want auto, %s): %w", name, ds.names(), tine.ErrInvalid)
}

// names lists the drivers' names as "a, b or c".
func (ds Drivers) names() string {
	var n []string
	for _, d := range ds {
		n = append(n, d.Name)
	}
	if len(n) < 2 {
		return strings.Join(n, "")
	}
	return strings.Join(n[:len(n)-1], ", ") + " or " + n[len(n)-1]
}

// Device returns the device number of the filesystem holding path: what a
// backend works on is a property of the filesystem, so probes are per
// device.
func Device(path string) (uint64, error) {
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

// SameFilesystem returns nil when a workspace at path and the state under
// dir are on one filesystem, which cloning and snapshots need, and an error
// wrapping tine.ErrUnsupported otherwise.
func SameFilesystem(path, dir string) error {
	da, err := Device(path)
	if err != nil {
		return err
	}
	db, err := Device(dir)
	if err != nil {
		return err
	}
	if da != db {
		return fmt.Errorf("%s and the state directory %s are on different filesystems: %w", path, dir, tine.ErrUnsupported)
	}
	return nil
}
