package btrfs_test

import (
	"testing"

	"github.com/tinehq/tine/internal/loopfs"
	"github.com/tinehq/tine/layer/btrfs"
	"github.com/tinehq/tine/layer/layertest"
)

// BenchmarkFork measures a fork cycle on 2,000 small files (layertest.BenchmarkFork).
func BenchmarkFork(b *testing.B) {
	layertest.BenchmarkFork(b, btrfs.New(), loopfs.Mount(b, "btrfs"))
}
