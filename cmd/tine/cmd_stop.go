package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/engine"
)

func newStop(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "stop RUN",
		Short: "Stop a run's processes, keeping its files",
		Long: `Stops every process of RUN: SIGTERM to its services and commands, SIGKILL
to what is left after a grace period, then its supervisor, cgroup and network
link. RUN's files stay as they are; tine start brings it back.`,
		Example: `  tine stop source-1`,
		Args:    exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return a.withOps(c.Context(), func(op ops, e *engine.Engine) error {
				r, err := op.Stop(c.Context(), args[0])
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(r)
				}
				fmt.Fprintf(a.stdout, "stopped %s\n", r.Name)
				return nil
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the stopped run as JSON")
	return c
}
