package mcp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/runtime"
)

// forkOut is one fork as fork_run reports it.
type forkOut struct {
	Name     string `json:"name"`
	ID       string `json:"id"`
	Approach string `json:"approach,omitempty"`
	Addr     string `json:"addr,omitempty"`
}

// forkAnswer is what fork_run returns.
type forkAnswer struct {
	Parent    string                `json:"parent"`
	Group     string                `json:"group"`
	ForkPoint string                `json:"fork_point"`
	Forks     []forkOut             `json:"forks"`
	Live      []engine.LiveReport   `json:"live,omitempty"`
	Ran       []*runtime.ExecResult `json:"ran,omitempty"` // the command, in each fork
}

// fork is the fork tool: the forks, nothing run in them.
func (t *tools) fork(ctx context.Context, in ForkInput) (*answer, error) {
	res, a, err := t.makeForks(ctx, in)
	if res == nil {
		return a, err
	}
	return forkReport(res), nil
}

// makeForks forks the run in names as in says; a fork the daemon put
// off comes back as its answer, with no result.
func (t *tools) makeForks(ctx context.Context, in ForkInput) (*engine.ForkResult, *answer, error) {
	run, err := t.runOrSelf(in.Run)
	if err != nil {
		return nil, nil, err
	}
	copies := in.Copies
	if copies == 0 {
		copies = max(1, len(in.Approaches))
	}
	if copies < 1 || copies > MaxCopies {
		return nil, nil, inputErr("copies must be 1 to %d, not %d", MaxCopies, copies)
	}
	req := httpapi.ForkRequest{Copies: copies, Name: in.Name, Approaches: in.Approaches, Live: in.Live}
	res, queued, err := t.api.Fork(ctx, run, req)
	if err != nil {
		return nil, nil, unreachable(err)
	}
	if queued != nil {
		a, err := deferred(queued)
		return nil, a, err
	}
	if res.Parent == nil || res.Group == nil || res.Version == nil {
		return nil, nil, fmt.Errorf("the daemon's answer to a fork has no parent, group or fork point")
	}
	return res, nil, nil
}

// errCanceled is the cause of a fork_run command's context that
// cancel_fork_run canceled.
var errCanceled = errors.New("canceled with cancel_fork_run")

// commandRun is a fork_run command running in a group's forks, which
// cancel_fork_run stops.
type commandRun struct {
	parent *tine.Run
	forks  []*tine.Run
	cancel context.CancelCauseFunc
	done   chan struct{}         // closed once the command ended in every fork
	ran    []*runtime.ExecResult // each fork's, once done
}

// forkCommand is fork_run with a command: the forks, then the command run
// in each of them at once.
func (t *tools) forkCommand(ctx context.Context, in ForkInput) (*answer, error) {
	res, a, err := t.makeForks(ctx, in)
	if res == nil {
		return a, err
	}
	a = forkReport(res)
	notify(ctx, 0, len(res.Forks), fmt.Sprintf("forked %s into %s (group %s); running the command in each",
		res.Parent.Name, runNames(res.Forks), res.Group.ID))
	ctx, cancel := context.WithCancelCause(ctx)
	c := &commandRun{parent: res.Parent, forks: res.Forks, cancel: cancel, done: make(chan struct{})}
	t.mu.Lock()
	t.commands[res.Group.ID] = c
	t.mu.Unlock()
	ran, err := t.runInForks(ctx, res.Group.ID, res.Forks, in.Command, in.TimeoutS)
	c.ran = ran
	close(c.done)
	t.mu.Lock()
	delete(t.commands, res.Group.ID)
	t.mu.Unlock()
	cancel(nil)
	out := a.Data.(forkAnswer)
	out.Ran = ran
	a.Data = out
	a.Note += fmt.Sprintf(" Ran %q in each: %s.", in.Command, exits(ran))
	if err != nil {
		return nil, err
	}
	return a, nil
}

// runningCommand is the fork_run command running in group ref (its id), or
// in the forks of run ref (its id or name), or nil.
func (t *tools) runningCommand(ref string) (string, *commandRun) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for g, c := range t.commands {
		if g == ref || c.parent.ID == ref || c.parent.Name == ref || strings.HasSuffix(ref, "/"+c.parent.Name) {
			return g, c
		}
	}
	return "", nil
}

// runInForks runs command in every fork of group at once through the
// daemon, reporting each fork's end as progress. A cancelled ctx (the
// client cancelled the call, or went away; cancel_fork_run) ends the
// requests, and the daemon kills each command's process tree; each fork
// whose command was killed so gets a result, and a progress message, that
// says so. The
// commands are the group's in the daemon, so a cancel_fork_run of another
// session (POST /v1/groups/{g}/cancel) kills them too.
func (t *tools) runInForks(ctx context.Context, group string, forks []*tine.Run, command string, timeout float64) ([]*runtime.ExecResult, error) {
	ran := make([]*runtime.ExecResult, len(forks))
	errs := make([]error, len(forks))
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for i, f := range forks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			script := "TINE_APPROACH=" + shellQuote(f.Approach) + "; export TINE_APPROACH; " + command
			req := httpapi.ExecRequest{Args: []string{"sh", "-c", script}, TimeoutS: timeout, Env: t.env, Group: group}
			t0 := time.Now()
			res, err := t.api.Exec(ctx, f.ID, req)
			// Cancelled (cancel_fork_run, or the client cancelled the call):
			// the daemon killed the command.
			if err != nil && ctx.Err() != nil {
				res, err = &runtime.ExecResult{Run: f.Name, Args: req.Args, Exit: -1, Killed: true, Seconds: time.Since(t0).Seconds()}, nil
			}
			ran[i], errs[i] = res, unreachable(err)
			msg := fmt.Sprintf("%s: exit %d after %.1fs", f.Name, res.Exit, res.Seconds)
			switch {
			case errs[i] != nil:
				msg = fmt.Sprintf("%s: %v", f.Name, errs[i])
			case res.Killed:
				msg = fmt.Sprintf("%s: killed after %.1fs", f.Name, res.Seconds)
			}
			mu.Lock()
			done++
			notify(ctx, done, len(forks), msg)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return ran, errors.Join(errs...)
}

func runNames(runs []*tine.Run) string {
	names := make([]string, len(runs))
	for i, r := range runs {
		names[i] = r.Name
	}
	return strings.Join(names, ", ")
}

func exits(ran []*runtime.ExecResult) string {
	var parts []string
	for _, r := range ran {
		switch {
		case r.Killed:
			parts = append(parts, fmt.Sprintf("%s killed after %.1fs", r.Run, r.Seconds))
		case r.TimedOut:
			parts = append(parts, fmt.Sprintf("%s timed out (exit %d)", r.Run, r.Exit))
		default:
			parts = append(parts, fmt.Sprintf("%s exit %d", r.Run, r.Exit))
		}
	}
	return strings.Join(parts, ", ")
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// deferred is a fork the daemon put off (an agent forking itself mid-turn
// is forked when its turn stops): its message says what to do.
func deferred(q *httpapi.Pending) (*answer, error) {
	if q.Message == "" {
		return nil, fmt.Errorf("the daemon's answer to a fork: queued, without a message")
	}
	return &answer{Note: "Not forked yet: " + q.Message + ".", Data: map[string]any{"queued": true, "message": q.Message}}, nil
}

func forkReport(res *engine.ForkResult) *answer {
	out := forkAnswer{Parent: res.Parent.Name, Group: res.Group.ID, ForkPoint: res.Version.ID, Live: res.Live}
	for _, f := range res.Forks {
		out.Forks = append(out.Forks, forkOut{Name: f.Name, ID: f.ID, Approach: f.Approach, Addr: f.Addr})
	}
	note := fmt.Sprintf("forked %s into %d fork(s), group %s; compare them with compare group=%s.",
		res.Parent.Name, len(res.Forks), res.Group.ID, res.Group.ID)
	return &answer{Note: note, Data: out}
}
