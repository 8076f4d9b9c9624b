package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/internal/display"
)

func newRequest(a *app) *cobra.Command {
	var into string
	var asJSON bool
	c := &cobra.Command{
		Use:   "request merge|promote|discard",
		Short: "From inside a run: ask a person to merge, promote or discard this run",
		Long: `Asks the tine daemon, with this run's capability, to resolve the run this
command runs in. Nothing happens until a person approves it: the request is
recorded as pending, with the run's changes and (for a merge) the dry-run
plan, and printed with its id. A fork may merge only into its direct parent.`,
		Example: `  tine request merge
  tine request promote`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			cl, run, err := insideClient()
			if err != nil {
				return err
			}
			var out *httpapi.Pending
			switch args[0] {
			case "merge":
				_, out, err = cl.Merge(c.Context(), run, httpapi.MergeRequest{Into: into})
			case "promote":
				_, out, err = cl.Promote(c.Context(), run, httpapi.PromoteRequest{})
			case "discard":
				_, out, err = cl.Discard(c.Context(), run, httpapi.DiscardRequest{})
			default:
				return usageErr(c, "request merge, promote or discard")
			}
			if err != nil {
				return err
			}
			if out == nil || out.Approval == nil {
				return fmt.Errorf("the daemon did not record a request: it answered without a pending approval")
			}
			if asJSON {
				return a.printJSON(out)
			}
			fmt.Fprintf(a.stdout, "asked: %s of %s is pending as %s; %s\n", out.Approval.Action, run, out.Approval.ID, display.Text(out.Message))
			return nil
		},
	}
	c.Flags().StringVar(&into, "into", "", "merge target (default and only choice: this run's parent)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
