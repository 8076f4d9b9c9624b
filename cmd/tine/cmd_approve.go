package main

import (
	"fmt"
	"net/url"
	"os"
	"text/tabwriter"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/httpapi"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/engine"
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
			var res *engine.Approved
			var err error
			if a.remote() {
				_, err = a.daemon().Do(c.Context(), "POST", approvalPath(args[0], "approve"), httpapi.DecideRequest{By: person()}, &res)
			} else if lerr := a.withEngine(c.Context(), func(e *engine.Engine) error {
				res, err = e.Approve(c.Context(), args[0], person())
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
			fmt.Fprintf(a.stdout, "approved %s: %s of %s done\n", res.Approval.ID, res.Approval.Action, res.Approval.Run)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

func newRefuse(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "refuse APPROVAL",
		Short:   "Refuse a resolution a run asked for",
		Example: `  tine refuse a1b2c3d4`,
		Args:    exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var ap *tine.Approval
			err := a.remoteOr(c.Context(), func(cl *httpapi.Client) error {
				_, err := cl.Do(c.Context(), "POST", approvalPath(args[0], "refuse"), httpapi.DecideRequest{By: person()}, &ap)
				return err
			}, func(e *engine.Engine) (err error) {
				ap, err = e.Refuse(c.Context(), args[0], person())
				return err
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "refused %s (%s of %s)\n", ap.ID, ap.Action, ap.Run)
			return nil
		},
	}
}

func newPending(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "pending [WORKSPACE]",
		Short: "List resolutions runs asked for that wait for a person",
		Long: `Lists the pending approvals: merges, promotions, discards and choices that
code inside runs asked for, with the evidence gathered when they were asked
(--json). tine approve runs one; tine refuse drops it.`,
		Example: `  tine pending
  tine pending app --json`,
		Args: maxArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var list []*tine.Approval
			err := a.remoteOr(c.Context(), func(cl *httpapi.Client) error {
				_, err := cl.Do(c.Context(), "GET", "/v1/approvals?workspace="+url.QueryEscape(firstArg(args)), nil, &list)
				return err
			}, func(e *engine.Engine) (err error) {
				list, err = e.Pending(c.Context(), firstArg(args))
				return err
			})
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(list)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "APPROVAL\tACTION\tRUN\tGROUP\tASKED BY\tEXPIRES IN")
			for _, ap := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", ap.ID, ap.Action, ap.Run, dash(ap.Group), dash(ap.RequestedBy),
					time.Until(ap.ExpiresAt).Round(time.Second))
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

// approvalPath is the API path of action on approval id.
func approvalPath(id, action string) string {
	return "/v1/approvals/" + url.PathEscape(id) + "/" + action
}
