// Package evidence derives, without a language model, the evidence that
// tells a fork-run's candidates apart: whether a fork's own tests prove
// anything (they fail on the fork point), whether it passes its rivals'
// valid tests, how it did on holdout and regression commands, and the red
// flags its diff raises by itself (tests deleted, skipped or weakened,
// literals of the tests hard-coded into the code, changes outside the
// paths the task names).
//
// Its functions are pure: they read patches, paths and outcomes that the
// caller (forkrun) gathered by running commands, and return what they
// mean. The result for one fork is a [Fork], stored in the fork-run report
// and read by the judges.
package evidence
