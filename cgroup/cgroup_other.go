//go:build !linux

package cgroup

import (
	"context"
	"fmt"
	"runtime"
	"time"
)

var errOS = fmt.Errorf("cgroups need Linux, not %s: %w", runtime.GOOS, ErrUnsupported)

// nameOr reports an invalid name as such, and anything else as
// unsupported.
func nameOr(name string) error {
	if err := validName(name); err != nil {
		return err
	}
	return errOS
}

// Open fails off Linux with ErrUnsupported, or ErrInvalidName.
func Open(name string) (*Group, error) { return nil, nameOr(name) }

// Load fails off Linux with ErrUnsupported, or ErrInvalidName.
func Load(name string) (*Group, error) { return nil, nameOr(name) }

// List fails off Linux with ErrUnsupported.
func List() ([]string, error) { return nil, errOS }

// Probe fails off Linux with ErrUnsupported.
func Probe() (Info, error) { return Info{}, errOS }

// Add fails off Linux with ErrUnsupported.
func (g *Group) Add(pid int) error { return errOS }

// Procs fails off Linux with ErrUnsupported.
func (g *Group) Procs() ([]int, error) { return nil, errOS }

// FreezerDir is "" off Linux: no freezer.
func (g *Group) FreezerDir() string { return "" }

// Freeze fails off Linux with ErrUnsupported.
func (g *Group) Freeze(ctx context.Context) error { return errOS }

// Thaw fails off Linux with ErrUnsupported.
func (g *Group) Thaw() error { return errOS }

// Frozen fails off Linux with ErrUnsupported.
func (g *Group) Frozen() (bool, error) { return false, errOS }

// Freezing fails off Linux with ErrUnsupported.
func (g *Group) Freezing() (bool, error) { return false, errOS }

// Kill fails off Linux with ErrUnsupported.
func (g *Group) Kill(ctx context.Context) error { return errOS }

// SetLimits fails off Linux with ErrUnsupported.
func (g *Group) SetLimits(l Limits) error { return errOS }

// Stats fails off Linux with ErrUnsupported.
func (g *Group) Stats() (Stats, error) { return Stats{}, errOS }

// Remove fails off Linux with ErrUnsupported.
func (g *Group) Remove(ctx context.Context) error { return errOS }

// Created returns when the group was made; an error off Linux.
func (g *Group) Created() (time.Time, error) { return time.Time{}, errOS }

// ProcsFiles returns the cgroup.procs files of the group; none off Linux.
func (g *Group) ProcsFiles() []string { return nil }

// MachineMemory returns 0 off Linux: unknown.
func MachineMemory() int64 { return 0 }
