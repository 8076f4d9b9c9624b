//go:build unix

package layertest

import "syscall"

// mkfifo creates a named pipe at path.
func mkfifo(path string, mode uint32) error { return syscall.Mkfifo(path, mode) }
