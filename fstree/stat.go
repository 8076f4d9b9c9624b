package fstree

import (
	"io/fs"
	"time"
)

// inode is what the tree walkers need from a stat beyond fs.FileInfo. On
// platforms without stat details every field is zero (and nlink 1), so hard
// links are copied as separate files and devices cannot be recreated.
type inode struct {
	dev, ino, nlink, rdev uint64
	uid, gid              int
	atime                 time.Time
}

// inodeKey identifies an inode across a walk.
type inodeKey struct{ dev, ino uint64 }

// key returns the identity of the inode.
func (i inode) key() inodeKey { return inodeKey{i.dev, i.ino} }

// permBits returns the permission bits of fi including setuid, setgid and
// sticky: the mode&07777 of stat(2).
func permBits(fi fs.FileInfo) fs.FileMode {
	return fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}

// isSpecial reports whether t (a fs.FileMode type) is a fifo, socket or device.
func isSpecial(t fs.FileMode) bool {
	return t&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice) != 0
}

// Atime returns the access time that fi, from an Lstat of this package or
// of package os, records; the modification time stands in where the
// platform's stat has no portable access time.
func Atime(fi fs.FileInfo) time.Time { return statOf(fi).atime }
