package main

import (
	"fmt"

	"github.com/tinehq/tine/httpapi"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/engine"
)

func newPath(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "path RUN",
		Short: "Print where the host can read RUN's files",
		Long: `Prints the directory where the host sees RUN's files: the workspace path for
the source, the fork's view under the state directory for a fork. Inside the
run (tine exec) the same files are at the workspace path.`,
		Example: `  ls "$(tine path source-1)"`,
		Args:    exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var rp httpapi.RunPath
			err := a.remoteOr(c.Context(), func(cl *httpapi.Client) error {
				p, err := cl.Path(c.Context(), remoteRef(c.Context(), cl, args[0]))
				rp = *p
				return err
			}, func(e *engine.Engine) (err error) {
				rp, err = httpapi.PathOf(c.Context(), e, args[0])
				return err
			})
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(rp)
			}
			fmt.Fprintln(a.stdout, rp.Path)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
