//go:build !linux

package engine

import "testing"

// mountID is 0 off Linux, where tine mounts nothing.
func mountID(t *testing.T, p string) uint64 { return 0 }
