// Package mnt wraps the mount system calls tine uses, with errors that name
// the operation, source, target and flags, and a mount-point test.
package mnt
