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
	flagImmutable = int(PinImmutable)
	flagAppend    = int(PinAppend)
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
	if noFlags(err) {
		return 0, nil
	}
	if err != nil {
		return 0, &os.PathError{Op: "ioctl FS_IOC_GETFLAGS", Path: path, Err: err}
	}
	return flags, nil
}

// ReadPins returns path's immutable and append-only flags (chattr +i,
// +a); a symlink, fifo or device, or a filesystem without flags, has none.
func ReadPins(path string) (Pins, error) {
	flags, err := inodeFlags(path)
	return Pins(flags & flagsInTheWay), err
}

// SetPins adds p to path's chattr flags, keeping its others. It needs
// CAP_LINUX_IMMUTABLE; a filesystem without flags is not an error, nor, when
// not root, a refusal.
func SetPins(path string, p Pins) error {
	if int(p)&flagsInTheWay == 0 {
		return nil
	}
	f, err := openForFlags(path)
	if err != nil {
		return err
	}
	defer f.Close()
	flags, err := unix.IoctlGetInt(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if err == nil {
		err = unix.IoctlSetPointerInt(int(f.Fd()), unix.FS_IOC_SETFLAGS, flags|int(p)&flagsInTheWay)
	}
	if noFlags(err) || err != nil && os.Geteuid() != 0 && errors.Is(err, unix.EPERM) {
		return nil
	}
	if err != nil {
		return &os.PathError{Op: "chattr +i +a", Path: f.Name(), Err: err}
	}
	return nil
}

// pinsOf returns the immutable and append-only flags of the open file f,
// none where its filesystem keeps no flags.
func pinsOf(f *os.File) (Pins, error) {
	flags, err := unix.IoctlGetInt(int(f.Fd()), unix.FS_IOC_GETFLAGS)
	if noFlags(err) {
		return 0, nil
	}
	if err != nil {
		return 0, &os.PathError{Op: "ioctl FS_IOC_GETFLAGS", Path: f.Name(), Err: err}
	}
	return Pins(flags & flagsInTheWay), nil
}

// xattrPins returns the pins the open file f records in its extended
// attribute name as letters (ParsePins); none if it has no such attribute.
func xattrPins(f *os.File, name string) (Pins, error) {
	buf := make([]byte, 32)
	n, err := unix.Fgetxattr(int(f.Fd()), name, buf)
	if errors.Is(err, unix.ENODATA) || errors.Is(err, unix.ENOTSUP) {
		return 0, nil
	}
	if err != nil {
		return 0, &os.PathError{Op: "fgetxattr " + name, Path: f.Name(), Err: err}
	}
	return ParsePins(string(buf[:n])), nil
}

// noFlags reports whether err says the file or its filesystem has no inode
// flags.
func noFlags(err error) bool {
	return errors.Is(err, unix.ENOTTY) || errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EINVAL)
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
