package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/httpapi"
)

func newCost(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "cost GROUP",
		Short: "Show what each fork of a fork-run spent, and the total",
		Long: `Shows each fork's spend as the budget pool counted it (the agent's final
total when it reported one, else its running estimate or its charges), its
state, the caps, and the total. GROUP is a group id, or any run of it.`,
		Example: `  tine cost 01HV3K...
  tine cost app-2 --json`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var rep *forkrun.Report
			err := a.remoteOr(c.Context(), func(cl *httpapi.Client) (err error) {
				rep, err = remoteGroupReport(c, cl, args[0])
				return err
			}, func(e *engine.Engine) (err error) {
				rep, err = loadGroupReport(c, e, args[0])
				return err
			})
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(rep.Spend())
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "FORK\tSTATE\tACCOUNT\tTOKENS\tCOST")
			for _, f := range rep.Forks {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t$%.6f\n", f.Name, f.State, dash(f.Account), f.Agent.Tokens.Total(), f.CostUSD)
			}
			fmt.Fprintf(tw, "total\t\t\t\t$%.6f\n", rep.TotalUSD())
			tw.Flush()
			fmt.Fprintf(a.stdout, "caps: %s\n", rep.Spend().Caps())
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return c
}

// loadGroupReport finds the fork-run report of a group given by id or by
// one of its runs.
func loadGroupReport(c *cobra.Command, e *engine.Engine, ref string) (*forkrun.Report, error) {
	ctx := c.Context()
	if g, _, err := e.Group(ctx, ref); err == nil {
		return forkrun.Load(e, g.Workspace, g.ID)
	}
	r, err := e.FindRun(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("no group or run %q: %w", ref, err)
	}
	if r.Run.Group == "" {
		return nil, usageErr(c, r.Run.Name+" is not a fork of any group")
	}
	return forkrun.Load(e, r.Workspace.ID, r.Run.Group)
}

// remoteGroupReport is loadGroupReport through the system daemon.
func remoteGroupReport(c *cobra.Command, cl *httpapi.Client, ref string) (*forkrun.Report, error) {
	ctx := c.Context()
	group := ref
	if !tine.LooksLikeID(tine.PrefixGroup, ref) {
		ps, err := cl.PS(ctx, remoteRef(ctx, cl, ref))
		if err != nil {
			return nil, fmt.Errorf("no group or run %q: %w", ref, err)
		}
		if ps.Run.Group == "" {
			return nil, usageErr(c, ps.Run.Name+" is not a fork of any group")
		}
		group = ps.Run.Group
	}
	return cl.ForkRunReport(ctx, group)
}
