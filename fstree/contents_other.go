//go:build !linux

package fstree

import (
	"errors"
	"os"
)

// nextData always returns errNoHoles: holes are found on Linux only, so
// elsewhere every byte is copied.
func nextData(_ *os.File, _, _ int64) (data, hole int64, err error) {
	return 0, 0, errNoHoles
}

// copyFileRange is Linux only; the caller copies bytes instead.
func copyFileRange(_, _ *os.File, _, _ int64) (int64, error) {
	return 0, errors.ErrUnsupported
}
