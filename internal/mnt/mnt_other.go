//go:build !linux

package mnt

import (
	"errors"
	"os"
)

var errLinux = errors.New("mounts need Linux")

func flagNames(flags uintptr) string { return "" }

// Mount is not available off Linux.
func Mount(source, target, fstype string, flags uintptr, data string) error { return errLinux }

// Bind is not available off Linux.
func Bind(source, target string) error { return errLinux }

// Unmount is not available off Linux.
func Unmount(target string, flags int) error { return errLinux }

// UnmountAll has nothing to do off Linux: nothing was mounted.
func UnmountAll(target string) error { return nil }

// IsMountpoint reports false off Linux, where tine mounts nothing.
func IsMountpoint(path string) (bool, error) { return false, nil }

// BindAt is not available off Linux.
func BindAt(source string, dir *os.File) (*os.File, error) { return nil, errLinux }

// Detach is not available off Linux.
func Detach(root *os.File) error { return errLinux }
