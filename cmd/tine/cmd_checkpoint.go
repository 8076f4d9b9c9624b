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
