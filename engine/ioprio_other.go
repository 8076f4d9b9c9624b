//go:build !linux

package engine

// lowerIOPriority does nothing off Linux.
func lowerIOPriority() {}
