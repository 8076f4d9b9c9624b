//go:build linux

package fstree

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Inode flags of chattr(1) that stop tine from removing or renaming a file
// (linux/fs.h): +i and +a.
const (
	flagImmutable = 0x10 // FS_IMMUTABLE_FL
	flagAppend    = 0x20 // FS_APPEND_FL
	flagsInTheWay = flagImmutable | flagAppend
)

// inodeFlags returns path's chattr flags; a symlink, fifo or device, or a
// filesystem without flags, has none.
func inodeFlags(path string) (int, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	flags, err := unix.IoctlGetInt(fd, unix.FS_IOC_GETFLAGS)
	if errors.Is(err, unix.ENOTTY) || errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EINVAL) {
		return 0, nil
	}
	if err != nil {
		return 0, &os.PathError{Op: "ioctl FS_IOC_GETFLAGS", Path: path, Err: err}
	}
	return flags, nil
}

// clearFlagsInTheWay removes the immutable and append-only flags from path
// if it has either, and reports whether it had. It needs
// CAP_LINUX_IMMUTABLE.
func clearFlagsInTheWay(path string) (bool, error) {
	flags, err := inodeFlags(path)
	if err != nil || flags&flagsInTheWay == 0 {
		return false, err
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	if err := unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, flags&^flagsInTheWay); err != nil {
		return false, &os.PathError{Op: "chattr -i -a", Path: path, Err: err}
	}
	return true, nil
}

// pinned reports whether path is immutable or append-only, the chattr
// flags under which it cannot be renamed or removed.
func pinned(path string) bool {
	flags, err := inodeFlags(path)
	return err == nil && flags&flagsInTheWay != 0
}
