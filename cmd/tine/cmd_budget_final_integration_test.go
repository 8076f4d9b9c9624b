//go:build linux

package main

import (
	"testing"

	"github.com/tinehq/tine/forkrun"
)

// TestForkRun_DoneNotKilled is issue 26's "the cap
// stopped forks after they finished": an agent whose own final total,
// given with its result line, crosses the per-fork budget has already
// finished; it is not killed for it, its spend counts, and it is judged.
// Before, it ended budget_killed after it had reported success.
func TestForkRun_DoneNotKilled(t *testing.T) {
	e, _ := forkRunWorkspace(t, "")
	rep, r := e.forkRunJSON("source", "--prompt", "fix app.txt", "-n", "1", "--approach", "cheap fix",
		"--budget", "0.1352", "--merge-mode", "manual")
	f := rep.Fork("source-1")
	if f == nil || f.State != forkrun.Finished || f.Agent.Result == "" {
		t.Fatalf("the fork: %+v\n%v", f, r)
	}
	if f.CostUSD < 0.135 || rep.Verdict == nil {
		t.Errorf("cost $%v (want the agent's own final total counted), verdict %+v", f.CostUSD, rep.Verdict)
	}
}
