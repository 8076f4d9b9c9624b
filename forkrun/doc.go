// Package forkrun runs one task as N competing forks: it forks a source run,
// starts an agent in each fork with its own approach, account and budget,
// streams each agent's output into evidence and cost, runs the test command
// in every fork, lets a judge score the finished ones, and resolves the
// group by its merge mode: auto merges the winner through the engine's
// merge (all or nothing) and discards the rest; auto_with_fallback records
// the winner and waits for a person's tine choose; vote asks the judge three
// times; manual only reports.
//
// Everything learned is stored in the group's directory
// (layout.Group) through package grouprec, which owns those files:
// report.json (rewritten as the forks progress, its version growing, so the
// dashboard and tine summary can follow), summary.json (the short form that
// goes into history.jsonl once the group is resolved); beside them each
// agent's full output in RUNID.agent.log and test output in RUNID.test.log.
package forkrun
