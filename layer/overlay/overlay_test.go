package overlay_test

import (
	"os"
	"testing"

	"github.com/tinehq/tine/engine/enginetest"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/layer/layertest"
	"github.com/tinehq/tine/layer/overlay"
)

// rootWhy says why this package's tests need root.
const rootWhy = "overlay mounts need CAP_SYS_ADMIN"

func TestConformance(t *testing.T) {
	enginetest.RequireOverlay(t, rootWhy)
	layertest.Run(t, func(t *testing.T) layer.Backend { return overlay.New() })
}

// TestConformanceCompacting runs the suite with a depth limit so small that
// nearly every seal compacts the stack into one layer.
func TestConformanceCompacting(t *testing.T) {
	enginetest.RequireOverlay(t, rootWhy)
	layertest.Run(t, func(t *testing.T) layer.Backend { return overlay.New(overlay.WithMaxDepth(2)) })
}

// BenchmarkFork measures a fork cycle on 2,000 small files
// (layertest.BenchmarkFork): for overlay the seal copies only the delta.
func BenchmarkFork(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("requires root: overlay mounts")
	}
	layertest.BenchmarkFork(b, overlay.New(), b.TempDir())
}
