//go:build !linux

package fstree

// clearFlagsInTheWay does nothing: inode flags are handled on Linux only.
func clearFlagsInTheWay(string) (bool, error) { return false, nil }

// pinned reports false: inode flags are handled on Linux only.
func pinned(string) bool { return false }
