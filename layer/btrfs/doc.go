// Package btrfs implements the "btrfs" layer backend: layers are read-only
// subvolumes and views are writable snapshots of them.
package btrfs
