package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/engine"
)

func newDiscard(a *app) *cobra.Command {
	var force, asJSON bool
	c := &cobra.Command{
		Use:   "discard RUN|GROUP",
		Short: "Stop a fork (or every fork of a group) and remove its files",
		Long: `Marks the run (or each live run of the group) discarded, then unmounts it and
removes its delta. Lineage, versions and events remain. A run whose changes
were never merged or promoted is refused (exit status 6) unless --force.`,
		Example: `  tine discard source-2
  tine discard g3xk9pq2a --force`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return a.withOps(c.Context(), func(op ops, e *engine.Engine) error {
				runs, err := op.Discard(c.Context(), args[0], force)
				if asJSON && runs != nil {
					if jerr := a.printJSON(runs); jerr != nil {
						return jerr
					}
				} else {
					for _, r := range runs {
						fmt.Fprintf(a.stdout, "discarded %s (%s)\n", r.Name, r.ID)
					}
				}
				return err
			})
		},
	}
	c.Flags().BoolVar(&force, "force", false, "discard even unmerged changes")
	c.Flags().BoolVar(&asJSON, "json", false, "print the discarded runs as JSON")
	return c
}
