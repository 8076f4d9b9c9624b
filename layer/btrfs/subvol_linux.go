package btrfs

import (
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Constants of the btrfs ioctl interface (linux/btrfs.h).
const (
	ioctlMagic        = 0x94
	pathNameMax       = 4087   // BTRFS_PATH_NAME_MAX
	subvolNameMax     = 4039   // BTRFS_SUBVOL_NAME_MAX
	subvolRdonly      = 1 << 1 // BTRFS_SUBVOL_RDONLY
	firstFreeObjectID = 256    // inode number of every subvolume's root
)

// volArgs is struct btrfs_ioctl_vol_args.
type volArgs struct {
	fd   int64
	name [pathNameMax + 1]byte
}

// volArgsV2 is struct btrfs_ioctl_vol_args_v2, without qgroup inheritance.
type volArgsV2 struct {
	fd      int64
	transid uint64
	flags   uint64
	unused  [4]uint64
	name    [subvolNameMax + 1]byte
}

// ioctl request numbers, built as the kernel's _IOW and _IOR macros do.
var (
	iocSubvolCreate   = iow(14, unsafe.Sizeof(volArgs{}))
	iocSnapDestroy    = iow(15, unsafe.Sizeof(volArgs{}))
	iocSnapCreateV2   = iow(23, unsafe.Sizeof(volArgsV2{}))
	iocSubvolGetflags = ior(25, unsafe.Sizeof(uint64(0)))
	iocSubvolSetflags = iow(26, unsafe.Sizeof(uint64(0)))
)

// iow is _IOW(BTRFS_IOCTL_MAGIC, nr, size).
func iow(nr, size uintptr) uintptr { return 1<<30 | size<<16 | ioctlMagic<<8 | nr }

// ior is _IOR(BTRFS_IOCTL_MAGIC, nr, size).
func ior(nr, size uintptr) uintptr { return 2<<30 | size<<16 | ioctlMagic<<8 | nr }

// ioctlError is a failed btrfs ioctl: it names the operation and path and
// unwraps to the errno.
type ioctlError struct {
	op, path string
	err      error
}

// Error returns "btrfs <op> <path>: <errno text>".
func (e *ioctlError) Error() string { return fmt.Sprintf("btrfs %s %s: %v", e.op, e.path, e.err) }

// Unwrap returns the errno.
func (e *ioctlError) Unwrap() error { return e.err }

// ioctl calls ioctl(2) on fd with a pointer argument.
func ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	for {
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
		switch errno {
		case 0:
			return nil
		case unix.EINTR:
			continue
		}
		return errno
	}
}

// openDir opens directory path for ioctls.
func openDir(path string) (int, error) {
	return unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

// inParent opens the parent directory of path and calls fn with it and the
// last element of path, checked to fit in max bytes.
func inParent(op, path string, max int, fn func(dirfd int, name string) error) error {
	name := filepath.Base(path)
	if len(name) > max {
		return &ioctlError{op, path, unix.ENAMETOOLONG}
	}
	fd, err := openDir(filepath.Dir(path))
	if err != nil {
		return &ioctlError{op, path, err}
	}
	defer unix.Close(fd)
	if err := fn(fd, name); err != nil {
		return &ioctlError{op, path, err}
	}
	return nil
}

// createSubvolume creates an empty subvolume at path.
func createSubvolume(path string) error {
	return inParent("subvolume create", path, pathNameMax, func(dirfd int, name string) error {
		var args volArgs
		copy(args.name[:], name)
		return ioctl(dirfd, iocSubvolCreate, unsafe.Pointer(&args))
	})
}

// snapshot makes dst a snapshot of subvolume src, read-only if asked.
func snapshot(src, dst string, readonly bool) error {
	srcfd, err := openDir(src)
	if err != nil {
		return &ioctlError{"snapshot", src, err}
	}
	defer unix.Close(srcfd)
	return inParent("snapshot", dst, subvolNameMax, func(dirfd int, name string) error {
		args := volArgsV2{fd: int64(srcfd)}
		if readonly {
			args.flags = subvolRdonly
		}
		copy(args.name[:], name)
		return ioctl(dirfd, iocSnapCreateV2, unsafe.Pointer(&args))
	})
}

// deleteSubvolume deletes the subvolume at path, read-only or not, with
// everything in it.
func deleteSubvolume(path string) error {
	return inParent("subvolume delete", path, pathNameMax, func(dirfd int, name string) error {
		var args volArgs
		copy(args.name[:], name)
		return ioctl(dirfd, iocSnapDestroy, unsafe.Pointer(&args))
	})
}

// setReadOnly marks the subvolume at path read-only.
func setReadOnly(path string) error {
	fd, err := openDir(path)
	if err != nil {
		return &ioctlError{"set read-only", path, err}
	}
	defer unix.Close(fd)
	var flags uint64
	if err := ioctl(fd, iocSubvolGetflags, unsafe.Pointer(&flags)); err != nil {
		return &ioctlError{"get flags", path, err}
	}
	flags |= subvolRdonly
	if err := ioctl(fd, iocSubvolSetflags, unsafe.Pointer(&flags)); err != nil {
		return &ioctlError{"set read-only", path, err}
	}
	return nil
}

// isSubvolume reports whether path is the root of a btrfs subvolume. A
// missing path is an error wrapping fs.ErrNotExist.
func isSubvolume(path string) (bool, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return false, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	if st.Ino != firstFreeObjectID || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return false, nil
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(path, &sfs); err != nil {
		return false, &os.PathError{Op: "statfs", Path: path, Err: err}
	}
	return sfs.Type == unix.BTRFS_SUPER_MAGIC, nil
}
