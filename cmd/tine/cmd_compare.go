package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/internal/display"
)

func newCompare(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "compare GROUP",
		Short: "Set a group's forks side by side",
		Long: `For each fork of GROUP: approach, state, readiness, files changed, lines
added and deleted, in the fork's work: what its merge would carry (git
scope: what git would stage; byproducts such as __pycache__ and .git
internals left out). Ready means what it means everywhere in tine: live
(a fork-run's fork: finished, its tests passed or none configured), real
changes, and a clean merge into its parent; the JSON's merges_cleanly
says the last alone. The recommendation is a heuristic: the smallest
ready diff (a fork-run's judge makes it instead).`,
		Example: `  tine compare g3xk9pq2a
  tine compare g3xk9pq2a --json`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var cmp *engine.Comparison
			var rep *forkrun.Report // a fork-run's report, when there is one, adds each fork's evidence
			err := a.remoteOr(c.Context(), func(cl *httpapi.Client) error {
				var err error
				if cmp, err = cl.Compare(c.Context(), args[0]); err != nil || asJSON {
					return err
				}
				rep, _ = cl.ForkRunReport(c.Context(), args[0])
				return nil
			}, func(e *engine.Engine) (err error) {
				if cmp, err = e.Compare(c.Context(), args[0]); err == nil && cmp.Group != nil && !asJSON {
					rep, _ = forkrun.Load(e, cmp.Group.Workspace, cmp.Group.ID)
				}
				return err
			})
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(cmp)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "FORK\tAPPROACH\tSTATE\tREADY\tFILES\tLINES\tEVIDENCE\tNOTE")
			for _, f := range cmp.Forks {
				mark := ""
				if f.Run.ID == cmp.Recommended {
					mark = " *"
				}
				ev := "—"
				if fk := rep.Fork(f.Run.ID); fk != nil {
					ev = fk.Evidence.Short()
				}
				fmt.Fprintf(tw, "%s%s\t%s\t%s\t%v\t%d\t+%d -%d\t%s\t%s\n", f.Run.Name, mark, display.Text(dash(f.Run.Approach)), f.Run.State,
					f.Ready, f.Changed, f.LinesAdded, f.LinesDeleted, display.Text(ev), display.Text(f.NotReady))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, display.Text(cmp.Rationale))
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the comparison as JSON")
	return c
}
