package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/internal/display"
)

func newPending(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "pending [WORKSPACE]",
		Short: "List resolutions runs asked for that wait for a person",
		Long: `Lists the pending approvals: merges, promotions, discards, choices and
external effects that code inside runs asked for. For an effect, WHAT is
exactly what tine approve will send (the remote and the commit of a push,
the request and its body's digest); --json has all the evidence gathered
when they were asked. tine approve runs one; tine refuse drops it.`,
		Example: `  tine pending
  tine pending app --json`,
		Args: maxArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var list []*tine.Approval
			names := map[string]string{} // run id: WORKSPACE/NAME
			err := a.remoteOr(c.Context(), func(cl *httpapi.Client) error {
				var err error
				if list, err = cl.Approvals(c.Context(), firstArg(args)); err != nil {
					return err
				}
				rows, err := cl.Runs(c.Context(), "", true)
				for _, r := range rows {
					names[r.ID] = r.WorkspaceName + "/" + r.Name
				}
				return err
			}, func(e *engine.Engine) (err error) {
				if list, err = control.Of(e).Pending(c.Context(), firstArg(args)); err != nil {
					return err
				}
				all, err := e.Records(c.Context(), "")
				for _, w := range all {
					for _, r := range w.Runs {
						names[r.ID] = w.Workspace.Name + "/" + r.Name
					}
				}
				return err
			})
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(list)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "APPROVAL\tACTION\tRUN\tGROUP\tASKED BY\tEXPIRES IN\tWHAT")
			for _, ap := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", ap.ID, ap.Action, runName(names, ap.Run), dash(ap.Group), dash(runName(names, ap.RequestedBy)),
					time.Until(ap.ExpiresAt).Round(time.Second), dash(display.Text(control.EffectOf(ap))))
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

// runName is run id's WORKSPACE/NAME in names, else the id itself.
func runName(names map[string]string, id string) string {
	if n, ok := names[id]; ok {
		return n
	}
	return id
}
