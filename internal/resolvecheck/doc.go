// Package resolvecheck is a differential test harness for resolution: it
// generates random trees and edit scripts, and computes, with a model of its
// own, what a merge of one run into another should produce.
//
// The tests in this package drive the real engine (init, fork, edits in the
// views, merge in every scope, promote, rollback, release) on every backend
// the machine supports and compare its results with this package's oracles:
// a path-level three-way merge (Merge), its git-scope counterpart (MergeGit),
// and git merge itself run on equivalent commits (GitMerge).
package resolvecheck
