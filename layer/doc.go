// Package layer defines the interface every file backend implements (overlay,
// btrfs, reflink, copy) and the types they share; package layertest checks
// any backend against the one conformance suite.
package layer
