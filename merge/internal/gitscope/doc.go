// Package gitscope is the git scope of a merge, behind package merge's
// PlanGit, PlanCommits and LandCommits.
//
// A git-scope merge carries the run's work as git sees it: the binary patch
// from the fork point's commit to the run's working tree (commits made since,
// staged and unstaged changes, untracked files that are not ignored), applied
// to a mirror of the target's touched paths so that the target itself is
// never written while planning. Paths the target has not touched are decided
// from the files without git (quick.go), giving the same plan.
//
// Building the patch must not write into the run's repository either: git
// works there with a copy of its index and a private object directory in
// scratch, reading the run's objects as an alternate.
//
// Files: gitscope.go runs git and plans (Plan); repo.go reads the run's
// repository through the temporary index and builds the patch; diff.go
// parses it into changes; mirror.go applies them to the mirror, finds the
// conflicts and makes the entries; quick.go is the quick path. With
// --commits, the run's commits are also carried into the target's history
// (commits.go): replayed onto its HEAD, or fast-forwarded to.
package gitscope
