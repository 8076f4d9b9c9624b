//go:build !unix

package fstree

import "io/fs"

// statOf returns what is portable of fi: no inode identity, no owner.
func statOf(fi fs.FileInfo) inode {
	return inode{nlink: 1, atime: fi.ModTime()}
}
