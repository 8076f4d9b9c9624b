package btrfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tinehq/tine"
)

// Probe reports whether dir can hold the backend's layers and views, by
// creating, snapshotting and deleting a subvolume in a temporary directory
// inside dir. It returns nil if all of that works and an error wrapping
// tine.ErrUnsupported if the filesystem (or the caller's privileges) refuse.
func Probe(dir string) error {
	tmp, err := os.MkdirTemp(dir, ".tine-btrfs-probe-")
	if err != nil {
		return fmt.Errorf("btrfs: probe: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := trySubvolumes(tmp); err != nil {
		return fmt.Errorf("btrfs: no subvolumes in %s: %w: %w", dir, tine.ErrUnsupported, err)
	}
	return nil
}

// trySubvolumes creates a subvolume in dir, snapshots it read-only and
// deletes both.
func trySubvolumes(dir string) error {
	sub, snap := filepath.Join(dir, "sub"), filepath.Join(dir, "snap")
	if err := createSubvolume(sub); err != nil {
		return err
	}
	err := snapshot(sub, snap, true)
	if err == nil {
		err = deleteSubvolume(snap)
	}
	return errors.Join(err, deleteSubvolume(sub))
}
