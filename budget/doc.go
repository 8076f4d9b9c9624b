// Package budget meters what the agents of a fork-run spend: a Pool enforces
// a per-fork cap and an aggregate cap over all forks, watches the aggregate
// live while forks stream and picks which fork to stop, and Assign hands each
// fork a distinct configured account.
//
// # Money
//
// Amounts are US dollars. Inside the pool they are kept as whole nanodollars,
// so sums of cents are exact: charges of $0.10 and $0.20 fit a $0.30 cap.
// NaN, ±Inf and negative amounts count as zero. A cap of 0 means no cap.
//
// # Lifecycle of a fork
//
// A fork is known to the pool from its first Charge, Observe or Finish and
// starts in StateRunning. Charge adds a settled cost; Observe raises the
// fork's spend to a live running estimate; Finish replaces whatever was
// recorded with the final total and moves the fork to StateFinished. A fork
// that crosses a cap moves to StateKilled ("budget_killed"); the caller is
// expected to stop its process.
//
// # Killed forks still count
//
// Money a killed fork spent was really spent, so its spend stays in the
// aggregate. Stopping the most expensive fork frees room in the sense that
// its spend stops growing: the others keep running and may keep charging as
// long as the aggregate, killed forks included, stays within the cap. When
// the killed fork is finally settled with Finish at a lower amount than its
// estimate, the difference becomes room for the others.
package budget
