package btrfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/layer/copyfs"
)

// Backend is a flat layer.Backend on btrfs. A layer is a read-only
// subvolume holding a whole tree; a view is a writable snapshot of one, made
// in constant time whatever the workspace size. Sealing a view snapshots it;
// sealing or importing a plain directory (a workspace that was never
// activated) creates a subvolume and clones the files into it. Layer and run
// paths must be on one btrfs filesystem; check with Probe first. Nested
// subvolumes inside a view are not part of its snapshots.
type Backend struct{}

var _ layer.Backend = (*Backend)(nil)

// New returns a btrfs backend.
func New() *Backend { return &Backend{} }

// Name returns "btrfs".
func (b *Backend) Name() string { return "btrfs" }

// Import makes the new layer a read-only subvolume holding dir's files. It
// always copies (cloning where dir shares the filesystem), whatever move
// says: for a flat backend the workspace directory stays the source's view.
func (b *Backend) Import(ctx context.Context, dir, layer string, _ bool) error {
	if err := capture(ctx, dir, layer); err != nil {
		return fmt.Errorf("btrfs: import %s: %w", dir, err)
	}
	return nil
}

// Activate makes r.View a writable snapshot of the one layer of a flat
// version.
func (b *Backend) Activate(_ context.Context, r layer.Run, layers []string) error {
	if err := flat(layers); err != nil {
		return fmt.Errorf("btrfs: activate %s: %w", r.ID, err)
	}
	err := os.Remove(r.View) // an empty directory would be in the snapshot's way
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("btrfs: activate %s: %w", r.ID, err)
	}
	if err := snapshot(layers[0], r.View, false); err != nil {
		return fmt.Errorf("btrfs: activate %s: %w", r.ID, err)
	}
	return nil
}

// Seal records r's view as the new read-only layer, by snapshot when the
// view is a subvolume, and returns it as the whole version.
func (b *Backend) Seal(ctx context.Context, r layer.Run, _ []string, layer string) ([]string, error) {
	if err := capture(ctx, r.View, layer); err != nil {
		return nil, fmt.Errorf("btrfs: seal %s: %w", r.ID, err)
	}
	return []string{layer}, nil
}

// Changes compares r's view with the one layer of base.
func (b *Backend) Changes(ctx context.Context, r layer.Run, base []string) ([]layer.Change, error) {
	if err := flat(base); err != nil {
		return nil, fmt.Errorf("btrfs: changes of %s: %w", r.ID, err)
	}
	changes, err := fstree.Diff(ctx, base[0], r.View)
	if err != nil {
		return nil, fmt.Errorf("btrfs: changes of %s: %w", r.ID, err)
	}
	return changes, nil
}

// Deactivate deletes r's view, a subvolume or (for a source that was never
// activated) a plain directory, and the contents of r.Dir. A missing view is
// not an error.
func (b *Backend) Deactivate(_ context.Context, r layer.Run) error {
	err := remove(r.View)
	if err == nil {
		err = copyfs.RemoveRun(r)
	}
	if err != nil {
		return fmt.Errorf("btrfs: deactivate %s: %w", r.ID, err)
	}
	return nil
}

// Read returns the one layer of a flat version itself, read-only, with
// nothing to release; scratch is not used.
func (b *Backend) Read(_ context.Context, layers []string, _ string) (string, func() error, error) {
	if err := flat(layers); err != nil {
		return "", nil, fmt.Errorf("btrfs: read: %w", err)
	}
	return layers[0], func() error { return nil }, nil
}

// RemoveLayer deletes the layer's subvolume; a missing layer is not an
// error.
func (b *Backend) RemoveLayer(_ context.Context, layer string) error {
	if err := remove(layer); err != nil {
		return fmt.Errorf("btrfs: remove layer: %w", err)
	}
	return nil
}

// capture makes dst a read-only subvolume holding src's files: a snapshot if
// src is a subvolume of the same filesystem, else a new subvolume with the
// files cloned (or copied, across filesystems, holes kept) into it. src is
// live: an entry that vanishes while it is copied is left out.
func capture(ctx context.Context, src, dst string) error {
	if sub, err := isSubvolume(src); err != nil || sub {
		if err != nil {
			return err
		}
		err := snapshot(src, dst, true)
		if !errors.Is(err, syscall.EXDEV) {
			return err
		}
	}
	if err := createSubvolume(dst); err != nil {
		return err
	}
	err := fstree.Copy(ctx, src, dst, fstree.CopyOptions{Reflink: true, SkipVanished: true, KeepPins: true})
	if err == nil {
		err = setReadOnly(dst)
	}
	if err != nil {
		return errors.Join(err, deleteSubvolume(dst))
	}
	return nil
}

// remove deletes path, a subvolume or a plain tree; missing is fine.
func remove(path string) error {
	sub, err := isSubvolume(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if sub {
		return deleteSubvolume(path)
	}
	return fstree.Purge(path)
}

// flat returns an error wrapping tine.ErrInvalid unless layers is a flat
// version: exactly one layer.
func flat(layers []string) error {
	if len(layers) != 1 {
		return fmt.Errorf("a flat backend's version has exactly one layer, got %d: %w", len(layers), tine.ErrInvalid)
	}
	return nil
}
