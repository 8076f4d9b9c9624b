package main

import (
	"context"
	"fmt"
	"net/url"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/fleet"
	"github.com/tinehq/tine/internal/display"
)

func newFetch(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "fetch TASK [RUN]",
		Short: "Bring a fleet task's winner into your workspace as a fork",
		Long: `Forks RUN (default: source, in the workspace containing the current
directory) into a fork named after TASK and brings the winner of the
task's fork-run there: its commits since the commit the task started from,
replayed with their authors, messages and order (fast-forward when RUN's
repository is at that commit, else on top of its HEAD), and its files
(staged, unstaged and untracked changes too). Look at it with tine diff,
then merge it as any fork: tine merge --dry-run FORK, tine merge FORK
(the commits land in RUN's history as a local fork's do). When RUN's
repository does not have the task's commit, its commits cannot be
replayed: the winner's files come as one patch, and a warning says so.
A patch or commit that does not apply leaves nothing behind.

A normal user works through the system daemon: they fetch the tasks they
submitted (tine submit through the daemon), into their own workspaces, the
fork's files theirs.

Exit status: 0 when fetched, 3 when TASK has no winner's patch (still
queued or running, lost, failed, or no winner) or is not yours, 9 when the
patch or a commit does not apply to RUN's.`,
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
			out, err := a.fetch(c.Context(), args[0], ref)
			if err != nil {
				return err
			}
			for _, n := range out.Notes {
				fmt.Fprintf(a.stderr, "tine: warning: %s\n", display.Text(n))
			}
			if asJSON {
				return a.printJSON(out)
			}
			how := "its files"
			if len(out.Commits) > 0 {
				how = fmt.Sprintf("its %d commit(s) and files", len(out.Commits))
			}
			fmt.Fprintf(a.stdout, "fetched task %s's winner (%s) into %s; see tine diff %s, then tine merge --dry-run %s\n",
				args[0], how, out.Fork.Name, out.Fork.Name, out.Fork.Name)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the fork made, the commits carried and the notes as JSON")
	return c
}

// fetch brings task id's winner into a fork of run ref: through the
// system daemon for a normal user, else with this process's engine.
func (a *app) fetch(ctx context.Context, id, ref string) (out *fleet.Fetched, err error) {
	if a.remote() {
		cl := a.daemon()
		_, err = cl.Do(ctx, "POST", "/v1/fleet/tasks/"+url.PathEscape(id)+"/fetch", fetchRequest{Run: remoteRef(ctx, cl, ref)}, &out)
		return out, err
	}
	err = a.withFleet(ctx, func(f *fleet.Fleet) error {
		t, err := f.Task(ctx, id)
		if err != nil {
			return err
		}
		return a.withEngine(ctx, func(e *engine.Engine) error {
			out, err = fetchTask(ctx, f, e, ref, t)
			return err
		})
	})
	return out, err
}

// fetchTask brings task t's winner (its patch and commits, from f) into a
// fork of run ref (fleet.Fetch).
func fetchTask(ctx context.Context, f *fleet.Fleet, e *engine.Engine, ref string, t *fleet.Task) (*fleet.Fetched, error) {
	patch, err := f.Patch(ctx, t.ID)
	if err != nil {
		return nil, fmt.Errorf("task %s (%s%s) has no winner's patch to fetch: %w", t.ID, t.State, because(t), tine.ErrNotFound)
	}
	bundle, err := f.Bundle(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	return fleet.Fetch(ctx, e, ref, t, patch, bundle)
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
