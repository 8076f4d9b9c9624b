//go:build unix && !linux

package fstree

import (
	"io/fs"
	"syscall"
)

// statOf extracts the inode details of fi. The access time is not portable
// across BSD-derived systems, so the modification time stands in for it.
func statOf(fi fs.FileInfo) inode {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return inode{nlink: 1, atime: fi.ModTime()}
	}
	return inode{
		dev: uint64(st.Dev), ino: uint64(st.Ino), nlink: uint64(st.Nlink),
		rdev: uint64(st.Rdev), uid: int(st.Uid), gid: int(st.Gid),
		atime: fi.ModTime(),
	}
}
