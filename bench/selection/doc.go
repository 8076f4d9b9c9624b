// Package selection is the selection benchmark of fork-run's judges: small
// tasks in Python, Go and shell, each a repository whose visible test
// fails, with 3 to 5 candidate patches of known quality (a correct minimal
// fix, a correct rewrite that adds tests, a fix that hard-codes the tested
// values, one that weakens or skips the test, one that breaks other
// behaviour, a plausible wrong fix, the same backed by a test asserting its
// own wrong answer, one that does nothing) and a holdout test, kept
// outside the repository, that defines the truth.
//
// Tasks are generated from the compact descriptions in problems.go. Run
// writes a task, puts it under tine, and runs `tine fork-run` with one fork
// per candidate: a command agent applies the candidate named by its
// approach, so the whole fork-run path runs (forks, supervisors, tests,
// evidence, judge). Score then replays every judge on the forks' evidence
// and prints, per judge, the accuracy of the chosen winner, the accuracy
// among the tasks where it did not abstain, the abstention rate and the
// wrong automatic merges, beside random choice and "smallest passing diff".
//
// bench/selection/run.sh runs all of it; cmd/tine's
// TestSelectionBenchmark runs a few tasks in CI.
package selection
