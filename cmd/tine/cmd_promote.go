package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/engine"
)

func newPromote(a *app) *cobra.Command {
	var drop, asJSON bool
	c := &cobra.Command{
		Use:   "promote RUN",
		Short: "Make a fork the source of its workspace",
		Long: `RUN becomes the source: it takes the source's name and role, and its files
appear at the workspace path. The old source retires; its files are kept as
a version. Refused (exit status 6), listing the paths, when the source
changed since RUN's fork point and RUN does not have those changes, unless
--drop-source-changes.`,
		Example: `  tine promote source-2`,
		Args:    exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return a.withOps(c.Context(), func(op ops, e *engine.Engine) error {
				res, err := op.Promote(c.Context(), args[0], drop)
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(res)
				}
				fmt.Fprintf(a.stdout, "%s (%s) is the source now; the old source retired as %s, its files kept as version %s\n",
					res.Run.Name, res.Run.ID, res.Retired.Name, res.Saved.ID)
				return nil
			})
		},
	}
	c.Flags().BoolVar(&drop, "drop-source-changes", false, "promote even though the source changed since the fork point")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
