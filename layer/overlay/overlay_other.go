//go:build !linux

package overlay

import (
	"context"
	"fmt"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/layer"
)

var errLinux = fmt.Errorf("overlay backend needs Linux: %w", tine.ErrUnsupported)

// Probe reports that overlay mounts are not available off Linux.
func Probe(dir string) error { return errLinux }

// Import is not supported off Linux.
func (b *Backend) Import(ctx context.Context, dir, l string, move bool) error { return errLinux }

// Activate is not supported off Linux.
func (b *Backend) Activate(ctx context.Context, r layer.Run, layers []string) error { return errLinux }

// Seal is not supported off Linux.
func (b *Backend) Seal(ctx context.Context, r layer.Run, base []string, l string) ([]string, error) {
	return nil, errLinux
}

// Changes is not supported off Linux.
func (b *Backend) Changes(ctx context.Context, r layer.Run, base []string) ([]layer.Change, error) {
	return nil, errLinux
}

// Deactivate is not supported off Linux.
func (b *Backend) Deactivate(ctx context.Context, r layer.Run) error { return errLinux }

// RemoveLayer is not supported off Linux.
func (b *Backend) RemoveLayer(ctx context.Context, l string) error { return errLinux }

// Restore is not supported off Linux.
func (b *Backend) Restore(ctx context.Context, r layer.Run, layers []string) error { return errLinux }

// Read is not supported off Linux.
func (b *Backend) Read(ctx context.Context, layers []string, scratch string) (string, func() error, error) {
	return "", nil, errLinux
}

// SealMove is not supported off Linux.
func (b *Backend) SealMove(ctx context.Context, r layer.Run, l string) error { return errLinux }

// MaxDepth reports the stack depth past which Seal compacts.
func (b *Backend) MaxDepth() int { return b.maxDepth }

// SealOnto is not supported off Linux.
func (b *Backend) SealOnto(ctx context.Context, r layer.Run, base, prev []string, l string) ([]string, layer.SealCost, error) {
	return nil, layer.SealCost{}, errLinux
}

// Changed knows nothing off Linux: there is no change tracker.
func (b *Backend) Changed(r layer.Run) (changed bool, last time.Time, known bool) {
	return false, time.Time{}, false
}

// Track is not supported off Linux.
func Track() error { return errLinux }

// StopTracking does nothing off Linux.
func StopTracking() {}
