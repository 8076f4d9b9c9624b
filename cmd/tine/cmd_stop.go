package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
)

func newStop(a *app) *cobra.Command {
	var asJSON, all bool
	c := &cobra.Command{
		Use:   "stop RUN [--all]",
		Short: "Stop a run's processes, keeping its files",
		Long: `Stops every process of RUN: SIGTERM to its services and commands, SIGKILL
to what is left after a grace period, then its supervisor, cgroup and network
link. RUN's files stay as they are; tine start brings it back. RUN's forks
keep running (tine stop says which); --all stops them too, and theirs.`,
		Example: `  tine stop source-1
  tine stop web/source --all`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return a.withOps(c.Context(), func(op ops, e *engine.Engine) error {
				r, err := op.Stop(c.Context(), args[0])
				if err != nil {
					return err
				}
				stopped := []*tine.Run{r}
				forks := a.runningForks(c.Context(), e, r)
				if all {
					for _, f := range forks {
						fr, err := op.Stop(c.Context(), f.ID)
						if err != nil {
							return err
						}
						stopped = append(stopped, fr)
					}
				}
				if asJSON {
					return a.printJSON(stopped)
				}
				for _, s := range stopped {
					fmt.Fprintf(a.stdout, "stopped %s\n", s.Name)
				}
				if !all && len(forks) > 0 {
					fmt.Fprintf(a.stderr, "note: forks of %s keep running: %s; tine stop --all %s stops them too\n",
						r.Name, runNames(forks), args[0])
				}
				return nil
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the stopped runs as JSON")
	c.Flags().BoolVar(&all, "all", false, "also stop RUN's forks, and theirs")
	return c
}

// runningForks are r's descendants whose processes run (as recorded), read
// locally with e or, without one, through the daemon.
func (a *app) runningForks(ctx context.Context, e *engine.Engine, r *tine.Run) []*tine.Run {
	var runs []*tine.Run
	if e != nil {
		recs, err := e.Records(ctx, r.Workspace)
		if err != nil || len(recs) == 0 {
			return nil
		}
		runs = recs[0].Runs
	} else {
		rec, err := a.daemon().Workspace(ctx, r.Workspace)
		if err != nil {
			return nil
		}
		runs = rec.Runs
	}
	parent := map[string]string{}
	for _, x := range runs {
		parent[x.ID] = x.Parent
	}
	var out []*tine.Run
	for _, x := range runs {
		if x.ID == r.ID || !x.Active() || x.Proc != tine.ProcRunning {
			continue
		}
		for p := parent[x.ID]; p != ""; p = parent[p] {
			if p == r.ID {
				out = append(out, x)
				break
			}
		}
	}
	return out
}

// runNames is the runs' names, comma-separated.
func runNames(runs []*tine.Run) string {
	names := make([]string, len(runs))
	for i, r := range runs {
		names[i] = r.Name
	}
	return strings.Join(names, ", ")
}
