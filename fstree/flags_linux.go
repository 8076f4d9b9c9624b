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
	f, err := openForFlags(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	flags, err := unix.IoctlGetInt(int(f.Fd()), unix.FS_IOC_GETFLAGS)
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
	f, err := openForFlags(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, flags&^flagsInTheWay); err != nil {
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

// openForFlags opens path to read or set its inode flags: never through a
// symlink, never blocking on a fifo, never taking a terminal.
func openForFlags(path string) (*os.File, error) {
	return OpenFile(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
}
