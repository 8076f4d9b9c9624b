//go:build unix

package fstree

import "syscall"

// Flags added when Copy opens a source entry: never through a symlink, and
// never blocking on a fifo that replaced a file.
const (
	openDirFlags  = syscall.O_NOFOLLOW | syscall.O_DIRECTORY
	openFileFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
)
