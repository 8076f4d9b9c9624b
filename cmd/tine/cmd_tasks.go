package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/fleet"
	"github.com/tinehq/tine/internal/display"
)

func newTasks(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "tasks [--json]",
		Short: "The fleet's nodes, queue and tasks' results",
		Long: `Shows the fleet's nodes (state, capacity, tasks running, last heartbeat,
backends and live-fork engines) and its tasks (batch, state, node, outcome,
winner, cost, and why a task failed, was lost or skipped), from the fleet's PostgreSQL
($TINE_FLEET_URL, else the store's when it is PostgreSQL's). A normal user
works through the system daemon (its store the fleet's): they see the tasks
they submitted through it, unless it serves with --shared-tasks.`,
		Example: `  tine tasks
  tine tasks --json | jq '.tasks[] | select(.state == "done")'`,
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			st, err := a.fleetStatus(c.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(st)
			}
			a.printStatus(st)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print nodes, queue and tasks as JSON")
	c.AddCommand(newTasksCancel(a))
	return c
}

// fleetStatus is the fleet's nodes and tasks: through the system daemon
// for a normal user (their own tasks, unless the daemon shares them all),
// else read from the fleet's database.
func (a *app) fleetStatus(ctx context.Context) (st *fleetStatus, err error) {
	if a.remote() {
		_, err = a.daemon().Do(ctx, "GET", "/v1/fleet", nil, &st)
		return st, err
	}
	err = a.withFleet(ctx, func(f *fleet.Fleet) error {
		st, err = status(ctx, f)
		return err
	})
	return st, err
}

// printStatus prints the nodes, then the tasks, as two tables.
func (a *app) printStatus(st *fleetStatus) {
	now := time.Now()
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tSTATE\tRUNNING\tCAPACITY\tHEARTBEAT\tBACKENDS\tLIVE FORK\tADDRESS")
	for _, n := range st.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s ago\t%s\t%s\t%s\n", display.Text(n.Name), n.State, n.Running, n.Capacity,
			now.Sub(n.BeatAt).Round(time.Second), strings.Join(n.Backends, ","), strings.Join(n.LiveFork, ","), display.Text(dash(n.Address)))
	}
	tw.Flush()
	fmt.Fprintln(a.stdout)
	var counts []string
	for _, s := range fleet.TaskStates {
		counts = append(counts, fmt.Sprintf("%d %s", st.Queue[s], s))
	}
	fmt.Fprintf(a.stdout, "tasks: %s\n", strings.Join(counts, ", "))
	if len(st.Tasks) == 0 {
		return
	}
	tw = tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tBATCH\tSTATE\tNODE\tOUTCOME\tWINNER\tCOST\tSUBMITTED\tNOTE")
	for _, t := range st.Tasks {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t$%.4f\t%s\t%s\n", t.ID, dash(t.Batch), t.State, display.Text(dash(t.Node)), dash(t.Outcome),
			display.Text(dash(t.Winner)), t.CostUSD, t.SubmittedAt.Local().Format(time.DateTime), display.Text(t.Reason))
	}
	tw.Flush()
}
