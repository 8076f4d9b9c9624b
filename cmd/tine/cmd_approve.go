package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/internal/display"
)

// person names who decided, for the record.
func person() string {
	if u := os.Getenv("SUDO_USER"); u != "" {
		return u
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return fmt.Sprintf("uid %d", os.Getuid())
}

func newApprove(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "approve APPROVAL",
		Short: "Approve a resolution a run asked for, and carry it out",
		Long: `Approves the pending approval APPROVAL (see tine pending) and runs its action
at once: the merge, promotion, discard or choice that code inside a run asked
for. It is refused if the approval expired, was already used, or the run
changed since it was offered (its state, or the files it would carry).`,
		Example: `  tine pending
  tine approve a1b2c3d4`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var res *control.Approved
			var err error
			if a.remote() {
				res, err = a.daemon().Approve(c.Context(), args[0], httpapi.DecideRequest{By: person()})
			} else if lerr := a.withEngine(c.Context(), func(e *engine.Engine) error {
				res, err = control.Of(e).Approve(c.Context(), args[0], person())
				return nil
			}); lerr != nil {
				return lerr
			}
			if res == nil || res.Approval == nil {
				return err
			}
			if asJSON {
				if perr := a.printJSON(res); perr != nil {
					return perr
				}
				return err
			}
			if err != nil {
				return fmt.Errorf("approved %s, but its %s failed: %w", args[0], res.Approval.Action, err)
			}
			if what := control.EffectOf(res.Approval); what != "" { // an effect: what was sent
				fmt.Fprintf(a.stdout, "approved %s: done: %s (its receipt: tine log)\n", res.Approval.ID, display.Text(what))
				return nil
			}
			fmt.Fprintf(a.stdout, "approved %s: %s of %s done\n", res.Approval.ID, res.Approval.Action, res.Approval.Run)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
