//go:build !linux

package tty

import (
	"errors"
	"os"
)

// errUnsupported: pseudo-terminals for runs exist only on Linux, as runs do.
var errUnsupported = errors.New("terminals for runs need Linux")

// Open allocates a pseudo-terminal; only on Linux.
func Open() (master, slave *os.File, err error) { return nil, nil, errUnsupported }

// SetSize sets a terminal's window size; only on Linux.
func SetSize(f *os.File, s Size) error { return errUnsupported }

// GetSize returns a terminal's window size; only on Linux.
func GetSize(f *os.File) (Size, error) { return Size{}, errUnsupported }
