//go:build !linux

package layertest

// testSparseFile is checked on Linux only, where SEEK_DATA and st_blocks
// tell a hole from written zeros.
func testSparseFile(h *harness) { h.t.Skip("layertest: sparse files are checked on Linux only") }
