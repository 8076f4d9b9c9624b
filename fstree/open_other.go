//go:build !unix

package fstree

// Flags added when Copy opens a source entry: none on this platform.
const (
	openDirFlags  = 0
	openFileFlags = 0
)
