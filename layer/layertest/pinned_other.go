//go:build !linux

package layertest

// testPinnedFiles is checked on Linux only, where chattr flags exist.
func testPinnedFiles(h *harness) { h.t.Skip("layertest: chattr flags are checked on Linux only") }
