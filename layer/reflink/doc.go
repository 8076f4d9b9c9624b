// Package reflink implements the "reflink" layer backend: whole-tree layers
// and views like the copy backend, but with file data cloned (FICLONE) so
// copies share extents on XFS and btrfs.
package reflink
