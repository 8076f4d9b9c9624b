package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/engine"
)

func newRollback(a *app) *cobra.Command {
	var to string
	var asJSON bool
	c := &cobra.Command{
		Use:   "rollback RUN --to VERSION",
		Short: "Make RUN's files exactly those of a recorded version",
		Long: `Replaces RUN's files with those of VERSION (an id or a label from tine tree).
The files RUN had are first recorded as a version of their own, so nothing
is lost: roll forward again with tine rollback RUN --to <that version>.`,
		Example: `  tine rollback source-1 --to before-refactor
  tine rollback source --to v7hq2mx3a`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if to == "" {
				return usageErr(c, "rollback needs --to VERSION")
			}
			return a.withOps(c.Context(), func(op ops, e *engine.Engine) error {
				res, err := op.Rollback(c.Context(), args[0], to)
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(res)
				}
				fmt.Fprintf(a.stdout, "%s is at version %s; its previous files are version %s\n", res.Run.Name, res.To.ID, res.Saved.ID)
				return nil
			})
		},
	}
	c.Flags().StringVar(&to, "to", "", "version id or label")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
