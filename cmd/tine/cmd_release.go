package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
)

func newRelease(a *app) *cobra.Command {
	var unmerged, force, asJSON bool
	c := &cobra.Command{
		Use:   "release WORKSPACE",
		Short: "Stop managing a workspace, leaving plain files as the source sees them",
		Long: `Unmounts the workspace and leaves its directory holding, as plain files,
exactly what the source run sees. Every fork is removed; forks with changes
never merged or promoted are refused (exit status 6) unless --unmerged. WORKSPACE is a path,
a name or an id.`,
		Example: `  tine release ~/src/app`,
		Args:    exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			ctx, stop := interruptible(c.Context())
			defer stop()
			o := outcome{before: "nothing was released", after: "the release was committed: " + args[0] + " holds the source's files, as plain files",
				watch: "tine ls shows whether " + args[0] + " is still managed"}
			if a.remote() {
				w, err := a.remoteRelease(ctx, args[0], unmerged || force)
				if err == nil {
					err = a.printReleased(w, asJSON)
				}
				return interrupted(ctx, err, err == nil, o)
			}
			return a.withEngine(ctx, func(e *engine.Engine) error {
				w, err := e.Release(a.progress(ctx, "releasing "+args[0], asJSON), args[0], unmerged || force)
				a.progressDone()
				if err == nil {
					err = a.printReleased(w, asJSON)
				}
				return interrupted(ctx, err, err == nil, o)
			})
		},
	}
	c.Flags().BoolVar(&unmerged, "unmerged", false, "remove forks even if their changes were never merged or promoted")
	deprecatedForce(c, &force, "--unmerged")
	c.Flags().BoolVar(&asJSON, "json", false, "print the released workspace as JSON")
	return c
}

func (a *app) printReleased(w *tine.Workspace, asJSON bool) error {
	if asJSON {
		return a.printJSON(w)
	}
	fmt.Fprintf(a.stdout, "released %s: %s holds plain files\n", w.Name, w.Path)
	return nil
}
