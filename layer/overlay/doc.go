// Package overlay implements the overlay file backend: a layer is a delta
// directory with overlay semantics, a run's view is an overlay mount of its
// version's layers under a private upper directory, and sealing copies that
// upper directory into a new layer without touching the run's mount.
package overlay
