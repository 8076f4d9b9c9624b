//go:build !unix

package layertest

import "errors"

// mkfifo reports that named pipes are not supported here.
func mkfifo(path string, mode uint32) error { return errors.ErrUnsupported }
