package mnt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

var flagTable = []struct {
	flag uintptr
	name string
}{
	{unix.MS_RDONLY, "MS_RDONLY"}, {unix.MS_BIND, "MS_BIND"}, {unix.MS_REC, "MS_REC"},
	{unix.MS_PRIVATE, "MS_PRIVATE"}, {unix.MS_SLAVE, "MS_SLAVE"}, {unix.MS_REMOUNT, "MS_REMOUNT"},
	{unix.MS_NOSUID, "MS_NOSUID"}, {unix.MS_NODEV, "MS_NODEV"}, {unix.MNT_DETACH, "MNT_DETACH"},
}

func flagNames(flags uintptr) string {
	var names []string
	for _, f := range flagTable {
		if flags&f.flag != 0 {
			names = append(names, f.name)
		}
	}
	return strings.Join(names, "|")
}

// Mount calls mount(2), retrying on EINTR.
func Mount(source, target, fstype string, flags uintptr, data string) error {
	for {
		err := unix.Mount(source, target, fstype, flags, data)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &Error{Op: "mount", Source: source, Target: target, Flags: flags, Data: data, Err: err}
		}
		return nil
	}
}

// Bind bind-mounts source on target.
func Bind(source, target string) error {
	return Mount(source, target, "", unix.MS_BIND, "")
}

// Unmount calls umount2(2) with flags, retrying on EINTR. It never detaches
// lazily unless asked: a busy mount is an error wrapping unix.EBUSY.
func Unmount(target string, flags int) error {
	for {
		err := unix.Unmount(target, flags)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &Error{Op: "unmount", Target: target, Flags: uintptr(flags), Err: err}
		}
		return nil
	}
}

// UnmountAll unmounts target until it is no longer a mount point, so
// stacked mounts go too. A path that is not mounted, or missing, is fine.
func UnmountAll(target string) error {
	for {
		ok, err := IsMountpoint(target)
		if err != nil || !ok {
			if errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return err
		}
		if err := Unmount(target, 0); err != nil {
			return err
		}
	}
}

// IsMountpoint reports whether path is the root of a mount, by comparing
// its device and inode with its parent's. It also finds bind mounts of a
// directory onto another on the same filesystem, by mount id.
func IsMountpoint(path string) (bool, error) {
	path = filepath.Clean(path)
	var st, pst unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &st); err != nil {
		return false, &os.PathError{Op: "statx", Path: path, Err: err}
	}
	if err := unix.Statx(unix.AT_FDCWD, filepath.Dir(path), unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &pst); err != nil {
		return false, &os.PathError{Op: "statx", Path: filepath.Dir(path), Err: err}
	}
	if st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 {
		return st.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0, nil
	}
	if st.Mask&unix.STATX_MNT_ID != 0 && pst.Mask&unix.STATX_MNT_ID != 0 {
		return st.Mnt_id != pst.Mnt_id, nil
	}
	return st.Dev_major != pst.Dev_major || st.Dev_minor != pst.Dev_minor, nil
}

// BindAt bind-mounts source on the directory dir, held open, rather than
// on a name (open_tree and move_mount): the mount lands on that directory
// whatever its path names by then. It returns the new mount's root, held
// open, for Detach.
func BindAt(source string, dir *os.File) (*os.File, error) {
	fd, err := unix.OpenTree(unix.AT_FDCWD, source, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return nil, &Error{Op: "open_tree", Source: source, Err: err}
	}
	err = unix.MoveMount(fd, "", int(dir.Fd()), "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH)
	if err != nil {
		unix.Close(fd)
		return nil, &Error{Op: "move_mount", Source: source, Target: dir.Name(), Err: err}
	}
	return os.NewFile(uintptr(fd), dir.Name()), nil
}

// Detach unmounts, lazily, the mount whose root BindAt returned, by that
// descriptor rather than by a name, and closes it.
func Detach(root *os.File) error {
	defer root.Close()
	return Unmount(fmt.Sprintf("/proc/self/fd/%d", root.Fd()), unix.MNT_DETACH)
}
