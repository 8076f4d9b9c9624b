// Package merge carries a run's changes into another run's files: it plans a
// three-way merge at path granularity (or from a git patch), and applies a
// plan as a transaction that lands whole or not at all, even across a crash.
//
// This package is the entry point. The git scope is in internal/gitscope, and
// the plan's types and the tree views both scopes plan with in internal/plan
// (re-exported here as Plan, Entry, Action).
package merge
