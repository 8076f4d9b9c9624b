package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/httpapi"
)

func newRefuse(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "refuse APPROVAL",
		Short:   "Refuse a resolution a run asked for",
		Example: `  tine refuse a1b2c3d4`,
		Args:    exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var ap *tine.Approval
			err := a.remoteOr(c.Context(), func(cl *httpapi.Client) error {
				var err error
				ap, err = cl.Refuse(c.Context(), args[0], httpapi.DecideRequest{By: person()})
				return err
			}, func(e *engine.Engine) (err error) {
				ap, err = control.Of(e).Refuse(c.Context(), args[0], person())
				return err
			})
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(ap)
			}
			fmt.Fprintf(a.stdout, "refused %s (%s of %s)\n", ap.ID, ap.Action, ap.Run)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the refused approval as JSON")
	return c
}
