//go:build !linux

package fstree

import "os"

// clearFlagsInTheWay does nothing: inode flags are handled on Linux only.
func clearFlagsInTheWay(string) (bool, error) { return false, nil }

// pinned reports false: inode flags are handled on Linux only.
func pinned(string) bool { return false }

// ReadPins returns none: inode flags are handled on Linux only.
func ReadPins(string) (Pins, error) { return 0, nil }

// SetPins does nothing: inode flags are handled on Linux only.
func SetPins(string, Pins) error { return nil }

// xattrPins returns none: inode flags are handled on Linux only.
func xattrPins(*os.File, string) (Pins, error) { return 0, nil }

// pinsOf returns none: inode flags are handled on Linux only.
func pinsOf(*os.File) (Pins, error) { return 0, nil }
