//go:build linux

package plan

import (
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// btrfsMagic is the f_type statfs(2) reports for btrfs.
const btrfsMagic = 0x9123683e

// OverlayMagic is the f_type statfs(2) reports for an overlay filesystem.
const OverlayMagic = 0x794c7630

// FSKind returns the filesystem type of directory root as statfs(2)
// reports it, 0 when it cannot tell.
func FSKind(root string) int64 {
	var st unix.Statfs_t
	if unix.Statfs(root, &st) != nil {
		return 0
	}
	return int64(st.Type)
}

// SharesInodes reports whether two trees of filesystem types a and b can
// show one file under one inode number on different devices: an overlay
// view shows a file of a lower layer that it has not copied up under the
// layer's inode number (all of tine's layers are on one filesystem), to a
// plain directory of that layer as to another overlay mount over it; two
// btrfs snapshots keep the inode items of files unchanged since.
func SharesInodes(a, b int64) bool {
	return a == OverlayMagic || b == OverlayMagic || (a == btrfsMagic && b == btrfsMagic)
}

// SameInode reports whether a and b, both regular files, are known to hold
// the same bytes without reading them: the same inode number, size, mode,
// owner, and modification and change times to the nanosecond, on the same
// device or, with acrossDevices, on trees that share inodes (SharesInodes).
// A write after the fork point changes the change time, which no call can
// set back, so an edited file never passes; a file that differs only by
// chance fails too, and is then compared by content.
func SameInode(a, b fs.FileInfo, acrossDevices bool) bool {
	sa, ok := a.Sys().(*syscall.Stat_t)
	if !ok || !a.Mode().IsRegular() {
		return false
	}
	sb, ok := b.Sys().(*syscall.Stat_t)
	if !ok || !b.Mode().IsRegular() {
		return false
	}
	return (sa.Dev == sb.Dev || acrossDevices) && sa.Ino == sb.Ino && sa.Size == sb.Size &&
		sa.Mode == sb.Mode && sa.Uid == sb.Uid && sa.Gid == sb.Gid &&
		sa.Mtim == sb.Mtim && sa.Ctim == sb.Ctim
}
