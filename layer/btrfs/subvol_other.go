//go:build !linux

package btrfs

import (
	"errors"
	"fmt"
	"os"
)

// errNoBtrfs is what every subvolume operation returns off Linux.
var errNoBtrfs = fmt.Errorf("btrfs subvolumes need Linux: %w", errors.ErrUnsupported)

// createSubvolume is not available on this platform.
func createSubvolume(string) error { return errNoBtrfs }

// snapshot is not available on this platform.
func snapshot(string, string, bool) error { return errNoBtrfs }

// deleteSubvolume is not available on this platform.
func deleteSubvolume(string) error { return errNoBtrfs }

// setReadOnly is not available on this platform.
func setReadOnly(string) error { return errNoBtrfs }

// isSubvolume reports false: there are no subvolumes here. A missing path
// is an error wrapping fs.ErrNotExist.
func isSubvolume(path string) (bool, error) {
	_, err := os.Lstat(path)
	return false, err
}
