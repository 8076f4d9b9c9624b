package main

import (
	"fmt"
	"net/url"
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
		Long: `For each fork of GROUP: approach, state, readiness (live, and its merge into
its parent is clean), files changed, lines added and deleted. The
recommendation is a heuristic: the smallest ready diff.`,
		Example: `  tine compare g3xk9pq2a
  tine compare g3xk9pq2a --json`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var cmp *engine.Comparison
			var rep *forkrun.Report // a fork-run's report, when there is one, adds each fork's evidence
			err := a.remoteOr(c.Context(), func(cl *httpapi.Client) error {
				g := "/v1/groups/" + url.PathEscape(args[0])
				if _, err := cl.Do(c.Context(), "GET", g+"/compare", nil, &cmp); err != nil || asJSON {
					return err
				}
				if _, err := cl.Do(c.Context(), "GET", g+"/report", nil, &rep); err != nil {
					rep = nil
				}
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

func newChoose(a *app) *cobra.Command {
	var merge, promote, discardAll, asJSON bool
	c := &cobra.Command{
		Use:   "choose GROUP [RUN --merge|--promote | --discard-all]",
		Short: "Resolve a group: keep one fork, discard the rest",
		Long: `Merges RUN into its parent (--merge) or promotes it (--promote); only after
that succeeded are the group's other live forks discarded. --discard-all
discards every fork of the group.`,
		Example: `  tine choose g3xk9pq2a source-2 --merge
  tine choose g3xk9pq2a --discard-all`,
		Args: maxArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			run := ""
			if len(args) == 2 {
				run = args[1]
			}
			switch {
			case len(args) == 0:
				return usageErr(c, "choose needs GROUP")
			case discardAll && (run != "" || merge || promote):
				return usageErr(c, "--discard-all takes no RUN, --merge or --promote")
			case !discardAll && (run == "" || merge == promote):
				return usageErr(c, "choose needs RUN with exactly one of --merge or --promote, or --discard-all")
			}
			return a.withOps(c.Context(), func(op ops, e *engine.Engine) error {
				res, err := op.Choose(c.Context(), args[0], run, promote)
				if res != nil && asJSON {
					if jerr := a.printJSON(res); jerr != nil {
						return jerr
					}
				} else if res != nil {
					if res.Merge != nil {
						if perr := a.printMerge(res.Merge, false); perr != nil {
							return perr
						}
					}
					if res.Promote != nil {
						fmt.Fprintf(a.stdout, "promoted %s\n", res.Promote.Run.Name)
					}
					for _, r := range res.Discarded {
						fmt.Fprintf(a.stdout, "discarded %s (%s)\n", r.Name, r.ID)
					}
				}
				return err
			})
		},
	}
	c.Flags().BoolVar(&merge, "merge", false, "merge RUN into its parent")
	c.Flags().BoolVar(&promote, "promote", false, "promote RUN to source")
	c.Flags().BoolVar(&discardAll, "discard-all", false, "discard every fork of the group")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
