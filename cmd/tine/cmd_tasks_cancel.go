package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fleet"
	"github.com/tinehq/tine/internal/access"
	"github.com/tinehq/tine/internal/account"
)

func newTasksCancel(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "cancel TASK...",
		Short: "Withdraw fleet tasks: queued ones never run, running ones are stopped",
		Long: `Withdraws each TASK: a queued task is canceled at once and never runs;
a running one is stopped by its node within a second (its agents killed,
its forks' work kept on that node) and recorded canceled, saying who
canceled it. A task canceled already is left as it is.

A normal user works through the system daemon and cancels the tasks they
submitted.

Exit status: 0 when every TASK is canceled or being stopped, 3 when one is
not found (or not yours), 5 when one had already ended (done, failed, lost
or skipped): nothing to cancel. The tasks after the first that cannot be
canceled are left as they are.`,
		Example: `  tine tasks cancel tk3m9qa2b
  tine tasks --json | jq -r '.tasks[] | select(.state == "queued") | .id' | xargs tine tasks cancel`,
		Args: minArgs(1, "one task or more"),
		RunE: func(c *cobra.Command, args []string) error {
			out := []*fleet.Withdrawal{}
			var err error
			for _, id := range args {
				var w *fleet.Withdrawal
				if w, err = a.cancelTask(c.Context(), id); err != nil {
					break
				}
				out = append(out, w)
				if !asJSON {
					fmt.Fprintln(a.stdout, withdrawalSays(w))
				}
			}
			if asJSON && (err == nil || len(out) > 0) {
				if jerr := a.printJSON(out); jerr != nil {
					return jerr
				}
			}
			return err
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the tasks' states after, as JSON")
	return c
}

// withdrawalSays is the line tine tasks cancel (and the dashboard) says of
// w.
func withdrawalSays(w *fleet.Withdrawal) string {
	switch {
	case w.Was == fleet.TaskCanceled:
		return fmt.Sprintf("task %s: canceled already", w.Task)
	case w.State == fleet.TaskCanceled:
		return fmt.Sprintf("task %s: canceled; it was queued and never ran", w.Task)
	default:
		return fmt.Sprintf("task %s: being stopped on node %s (its agents are stopped within a second, its forks' work kept there); tine tasks shows it canceled once it is", w.Task, w.Node)
	}
}

// cancelTask withdraws task id for the caller: through the system daemon
// for a normal user (their own tasks), else in the fleet's database.
func (a *app) cancelTask(ctx context.Context, id string) (*fleet.Withdrawal, error) {
	if a.remote() {
		var w fleet.Withdrawal
		_, err := a.daemon().Do(ctx, "POST", "/v1/fleet/tasks/"+url.PathEscape(id)+"/cancel", nil, &w)
		return &w, err
	}
	var w *fleet.Withdrawal
	err := a.withFleet(ctx, func(f *fleet.Fleet) error {
		var err error
		w, err = withdraw(ctx, f, id, localOwner().By)
		return err
	})
	return w, err
}

// withdraw withdraws task id for by (user@host); a task that had ended
// otherwise than canceled is a state error.
func withdraw(ctx context.Context, f *fleet.Fleet, id, by string) (*fleet.Withdrawal, error) {
	w, err := f.Withdraw(ctx, id, "canceled by "+by)
	if err != nil {
		return nil, err
	}
	if w.State != fleet.TaskCanceled && w.State != fleet.TaskRunning {
		return nil, fmt.Errorf("task %s had already ended (%s): nothing to cancel: %w", id, w.State, tine.ErrState)
	}
	return w, nil
}

// cancelTask is POST /v1/fleet/tasks/{id}/cancel: the caller withdraws a
// task they see (a normal user, their own).
func (nd *node) cancelTask(w http.ResponseWriter, r *http.Request) {
	t, err := nd.visibleTask(r, r.PathValue("id"))
	if err != nil {
		writeAPIError(w, err)
		return
	}
	by := localOwner()
	if c := access.From(r.Context()); c != nil {
		by = ownerOf(c.UID, account.Lookup(c.UID, c.GID).Name)
	}
	wd, err := withdraw(context.WithoutCancel(r.Context()), nd.f, t.ID, by.By)
	if err != nil {
		writeAPIError(w, err)
		return
	}
	writeAPIJSON(w, http.StatusOK, wd)
}
