package reflink_test

import (
	"testing"

	"github.com/tinehq/tine/internal/loopfs"
	"github.com/tinehq/tine/layer/layertest"
	"github.com/tinehq/tine/layer/reflink"
)

// BenchmarkFork measures a fork cycle on 2,000 small files (layertest.BenchmarkFork).
func BenchmarkFork(b *testing.B) {
	layertest.BenchmarkFork(b, reflink.New(), loopfs.Mount(b, "xfs"))
}
