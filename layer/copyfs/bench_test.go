package copyfs_test

import (
	"testing"

	"github.com/tinehq/tine/layer/copyfs"
	"github.com/tinehq/tine/layer/layertest"
)

// BenchmarkFork measures a fork cycle on 2,000 small files (layertest.BenchmarkFork).
func BenchmarkFork(b *testing.B) {
	layertest.BenchmarkFork(b, copyfs.New(), b.TempDir())
}
