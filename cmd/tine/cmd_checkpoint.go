package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/engine"
)

func newCheckpoint(a *app) *cobra.Command {
	var label string
	var asJSON bool
	c := &cobra.Command{
		Use:   "checkpoint RUN",
		Short: "Record a version of RUN without stopping it",
		Long: `Records RUN's current files as a version you can later roll back to (by id
or by --label). RUN keeps running; its view is not touched.`,
		Example: `  tine checkpoint source-1 --label before-refactor`,
		Args:    exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return a.withOps(c.Context(), func(op ops, e *engine.Engine) error {
				v, err := op.Checkpoint(c.Context(), args[0], label)
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(v)
				}
				fmt.Fprintf(a.stdout, "version %s%s\n", v.ID, quoted(v.Label))
				return nil
			})
		},
	}
	c.Flags().StringVar(&label, "label", "", "a label to find the version by")
	c.Flags().BoolVar(&asJSON, "json", false, "print the version as JSON")
	return c
}
