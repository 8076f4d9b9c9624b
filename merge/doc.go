// Package merge carries a run's changes into another run's files: it plans a
// three-way merge at path granularity (or from a git patch), and applies a
// plan as a transaction that lands whole or not at all, even across a crash.
package merge
