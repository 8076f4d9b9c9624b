package main

import (
	"fmt"

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
			return a.withEngine(c.Context(), func(e *engine.Engine) error {
				r, err := e.FindRun(c.Context(), args[0])
				if err != nil {
					return err
				}
				if !r.Run.Live() {
					return stateErr(r.Run)
				}
				p := e.Path(r.Workspace, r.Run)
				if asJSON {
					return a.printJSON(map[string]string{"run": r.Run.ID, "name": r.Run.Name, "path": p, "workspace_path": r.Workspace.Path})
				}
				fmt.Fprintln(a.stdout, p)
				return nil
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
