// Package loopfs mounts small throwaway filesystems on loop devices for tests
// and benchmarks that need XFS or btrfs features (reflinks, subvolumes).
package loopfs
