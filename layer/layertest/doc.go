// Package layertest is the conformance suite every layer.Backend (overlay,
// btrfs, reflink, copy) runs: Run plays the engine, imports, activates, seals
// and forks fixture trees, and reads every view back with plain os calls.
package layertest
