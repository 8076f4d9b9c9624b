package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/capability"
	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/internal/display"
)

// insideClient is the daemon client of code inside a run: it signs with
// the run's capability (TINE_CAPABILITY) and talks to the daemon's socket
// (TINE_SOCKET), both of which tine puts in every run.
func insideClient() (*httpapi.Client, string, error) {
	path, sock := os.Getenv("TINE_CAPABILITY"), os.Getenv("TINE_SOCKET")
	if path == "" || sock == "" {
		return nil, "", fmt.Errorf("this command works inside a run (tine exec RUN -- tine ...): %w", tine.ErrState)
	}
	c, err := capability.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("the run's capability: %w", err)
	}
	return httpapi.NewClient(sock, &c), c.Run, nil
}

func newForkSelf(a *app) *cobra.Command {
	var req httpapi.ForkRequest
	var asJSON bool
	c := &cobra.Command{
		Use:   "fork-self",
		Short: "From inside a run: fork this run",
		Long: `Asks the tine daemon, with this run's capability, to fork the run this command
runs in into --copies forks with the given approaches. Only works inside a run,
with tine serve running on the host.`,
		Example: `  tine fork-self -n 2 --approach "upgrade in place" --approach "pin and patch"`,
		Args:    exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			cl, run, err := insideClient()
			if err != nil {
				return err
			}
			res, queued, err := cl.Fork(c.Context(), run, req)
			if err != nil {
				return err
			}
			if queued != nil { // until the agent's turn stops
				if asJSON {
					return a.printJSON(queued)
				}
				fmt.Fprintln(a.stdout, display.Text(queued.Message))
				return nil
			}
			if asJSON {
				return a.printJSON(res)
			}
			fmt.Fprintf(a.stdout, "forked %s into group %s:\n", res.Parent.Name, res.Group.ID)
			for _, f := range res.Forks {
				fmt.Fprintf(a.stdout, "  %s\t%s\t%s\n", f.Name, f.ID, display.Text(f.Approach))
			}
			a.printSeal(res.Parent.Name, res.Seal)
			a.printLive(res.Live)
			return nil
		},
	}
	c.Flags().IntVarP(&req.Copies, "copies", "n", 1, "number of forks")
	c.Flags().StringArrayVar(&req.Approaches, "approach", nil, "approach of the next fork (repeatable)")
	c.Flags().StringVar(&req.Live, "live", "", "live-state mode of the forks (see tine fork)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
