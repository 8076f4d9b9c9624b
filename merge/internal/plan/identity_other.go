//go:build !linux

package plan

import "io/fs"

// FSKind returns 0: filesystem types are only told apart on Linux.
func FSKind(string) int64 { return 0 }

// SharesInodes reports false off Linux.
func SharesInodes(a, b int64) bool { return false }

// SameInode reports false off Linux: files are compared by content.
func SameInode(a, b fs.FileInfo, acrossDevices bool) bool { return false }
