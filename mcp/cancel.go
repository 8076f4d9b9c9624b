package mcp

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/runtime"
)

// CancelInput is the input of cancel_fork_run.
type CancelInput struct {
	Group string `json:"group" jsonschema:"the fork-run's group (fork_run returns it), or the run it forked: its newest fork-run"`
}

// cancelWait bounds how long cancel_fork_run waits for a fork-run in the
// daemon to end once canceled; its agents are killed at once, its
// evidence gathered after.
const cancelWait = time.Minute

// cancelForkRun is cancel_fork_run: a fork_run command this server runs
// is stopped here; else the daemon cancels its fork-run.
func (t *tools) cancelForkRun(ctx context.Context, in CancelInput) (*answer, error) {
	if in.Group == "" {
		return nil, inputErr("group is required (a group id, or the run forked)")
	}
	if g, c := t.runningCommand(in.Group); c != nil {
		c.cancel(errCanceled)
		select {
		case <-c.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		// The daemon kills a command once its request went away: wait for it.
		if left := t.awaitKilled(ctx, c.forks); len(left) > 0 {
			note := fmt.Sprintf("canceling the command fork_run ran in group %s: still ending after %s in %s; ps shows what runs.", g, killWait, strings.Join(left, ", "))
			return &answer{Note: note, Data: map[string]any{"group": g, "ran": c.ran, "still_running": left}}, nil
		}
		note := fmt.Sprintf("canceled the command fork_run ran in group %s: %s. The forks are kept: discard drops them.", g, exits(c.ran))
		return &answer{Note: note, Data: map[string]any{"group": g, "ran": c.ran}}, nil
	}
	cr, err := t.api.CancelForkRun(ctx, in.Group)
	if err != nil {
		return nil, unreachable(err)
	}
	if len(cr.Killed) > 0 { // a fork_run command another session runs
		return t.killedElsewhere(ctx, cr), nil
	}
	rep, err := t.awaitEnd(ctx, cr.Group)
	if err != nil {
		return nil, err
	}
	v := reportOf(rep)
	if rep.Outcome == forkrun.OutcomeRunning {
		note := fmt.Sprintf("canceling fork-run %s: its agents are being killed, but it had not ended after %s; follow it with fork_run_report group=%s.", rep.Group, cancelWait, rep.Group)
		return &answer{Note: note, Data: v}, nil
	}
	note := fmt.Sprintf("canceled fork-run %s (outcome %s): %s. Forks kept are resolved with choose or discard.", rep.Group, rep.Outcome, forkStates(v.Forks))
	return &answer{Note: note, Data: v}, nil
}

// killedElsewhere answers a cancel that killed the commands a fork_run
// of another session (or process) runs in the group's forks: it waits
// for them to end and says each fork's.
func (t *tools) killedElsewhere(ctx context.Context, cr *httpapi.ForkRunCanceled) *answer {
	forks := make([]*tine.Run, len(cr.Killed))
	parts := make([]string, len(cr.Killed))
	for i, k := range cr.Killed {
		forks[i], parts[i] = &tine.Run{ID: k.Run, Name: k.Name}, k.Name+" killed"
	}
	data := map[string]any{"group": cr.Group, "killed": cr.Killed}
	if left := t.awaitKilled(ctx, forks); len(left) > 0 {
		data["still_running"] = left
		return &answer{Note: fmt.Sprintf("canceling the command another fork_run runs in group %s: still ending after %s in %s; ps shows what runs.",
			cr.Group, killWait, strings.Join(left, ", ")), Data: data}
	}
	return &answer{Note: fmt.Sprintf("canceled the command another fork_run ran in group %s: %s. The forks are kept: discard drops them.",
		cr.Group, strings.Join(parts, ", ")), Data: data}
}

// killWait bounds how long cancel_fork_run waits for the daemon to kill
// a canceled command.
const killWait = 10 * time.Second

// awaitKilled waits, at most killWait, until no command runs in forks
// (their supervisors stopped, or only services and the supervisor are
// left), and returns the forks where one still runs.
func (t *tools) awaitKilled(ctx context.Context, forks []*tine.Run) []string {
	deadline := time.Now().Add(killWait)
	for {
		var left []string
		for _, f := range forks {
			if ps, err := t.api.PS(ctx, f.ID); err == nil && commandRuns(ps) {
				left = append(left, f.Name)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return left
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// commandRuns reports whether a process other than the supervisor and
// the services runs in the run ps shows.
func commandRuns(ps *runtime.PS) bool {
	if ps.State != runtime.ProcRunning {
		return false
	}
	for _, p := range ps.Processes {
		if p.Service == "" && p.NSPid != 1 && p.Pid != ps.Supervisor {
			return true
		}
	}
	return false
}

// awaitEnd polls group's fork-run report until it ended, at most
// cancelWait, and returns the last report.
func (t *tools) awaitEnd(ctx context.Context, group string) (*forkrun.Report, error) {
	deadline := time.Now().Add(cancelWait)
	for {
		rep, err := t.forkReport(ctx, group)
		if err != nil || rep.Outcome != forkrun.OutcomeRunning || time.Now().After(deadline) {
			return rep, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// forkStates says each fork's state, and why when it says more.
func forkStates(forks []forkRunView) string {
	parts := make([]string, len(forks))
	for i, f := range forks {
		parts[i] = fmt.Sprintf("%s %s", f.Name, f.State)
		if f.Reason != "" {
			parts[i] += " (" + f.Reason + ")"
		}
	}
	return strings.Join(parts, "; ")
}
