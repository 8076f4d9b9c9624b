package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/fleet"
	"github.com/tinehq/tine/internal/display"
	"github.com/tinehq/tine/internal/gitcmd"
	"github.com/tinehq/tine/merge"
)

func newFetch(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "fetch TASK [RUN]",
		Short: "Bring a fleet task's winner into your workspace as a fork",
		Long: `Forks RUN (default: source, in the workspace containing the current
directory) into a fork named after TASK and applies the winner's patch there:
the files of the winner of the task's fork-run, as they differ from the
commit the task started from (its commits, staged, unstaged and untracked
changes). Look at it with tine diff, then merge it as any fork:
tine merge --dry-run FORK, tine merge FORK. RUN's repository should be at
the task's commit; a patch that does not apply leaves nothing behind.

Exit status: 0 when fetched, 3 when TASK has no winner's patch (still
queued or running, lost, failed, or no winner), 9 when the patch does not
apply to RUN's files.`,
		Example: `  tine fetch tk3m9qa2b
  tine merge --dry-run tk3m9qa2b && tine merge tk3m9qa2b`,
		Args: minArgs(1, "TASK"),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 2 {
				return usageErr(c, "give TASK and at most one RUN")
			}
			ref := "source"
			if len(args) == 2 {
				ref = args[1]
			}
			return a.withFleet(c.Context(), func(f *fleet.Fleet) error {
				t, err := f.Task(c.Context(), args[0])
				if err != nil {
					return err
				}
				patch, err := f.Patch(c.Context(), t.ID)
				if err != nil {
					return fmt.Errorf("task %s (%s%s) has no winner's patch to fetch: %w", t.ID, t.State, because(t), tine.ErrNotFound)
				}
				return a.withEngine(c.Context(), func(e *engine.Engine) error {
					fk, err := a.fetchTask(c.Context(), e, ref, t, patch)
					if err != nil {
						return err
					}
					if asJSON {
						return a.printJSON(fk)
					}
					fmt.Fprintf(a.stdout, "fetched task %s's winner (%s, on node %s) into %s; see tine diff %s, then tine merge --dry-run %s\n",
						t.ID, display.Text(t.Winner), display.Text(t.Node), fk.Name, fk.Name, fk.Name)
					return nil
				})
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the fork made as JSON")
	return c
}

// because is ": REASON" for a task with a reason, else "".
func because(t *fleet.Task) string {
	if t.Reason != "" {
		return ": " + t.Reason
	}
	if t.Outcome != "" {
		return ", " + t.Outcome
	}
	return ""
}

// fetchTask forks ref into a fork named after t and applies patch to its
// files; a patch that does not apply discards the fork.
func (a *app) fetchTask(ctx context.Context, e *engine.Engine, ref string, t *fleet.Task, patch []byte) (_ *tine.Run, err error) {
	res, err := e.Fork(ctx, ref, engine.ForkOptions{Copies: 1, Name: t.ID, Live: "none"})
	if err != nil {
		return nil, err
	}
	fk := res.Forks[0]
	defer func() {
		if err != nil {
			if _, derr := e.Discard(context.WithoutCancel(ctx), fk.ID, true); derr != nil {
				err = fmt.Errorf("%w (and discarding fork %s: %v)", err, fk.Name, derr)
			}
		}
	}()
	r, err := e.FindRun(ctx, fk.ID)
	if err != nil {
		return nil, err
	}
	dir := e.Path(r.Workspace, fk)
	if fk.GitHead != "" && fk.GitHead != t.Commit {
		fmt.Fprintf(a.stderr, "tine: warning: %s is at commit %.12s, task %s started from %.12s: the patch may not apply\n", res.Parent.Name, fk.GitHead, t.ID, t.Commit)
	}
	drivers, err := gitcmd.Drivers(ctx, dir)
	if err != nil {
		return nil, err
	}
	if _, err := gitcmd.Run(ctx, dir, nil, drivers, patch, "apply", "--binary", "--whitespace=nowarn", "-"); err != nil {
		return nil, fmt.Errorf("task %s's patch does not apply to %s: %s: %w", t.ID, res.Parent.Name, gitReason(err), merge.ErrConflict)
	}
	return fk, nil
}

// gitReason is the first line git printed on stderr for err, else err.
func gitReason(err error) string {
	var ge *gitcmd.Error
	if errors.As(err, &ge) && strings.TrimSpace(ge.Stderr) != "" {
		return firstLineOf(strings.TrimSpace(ge.Stderr))
	}
	return err.Error()
}
