package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/runtime"
)

func newGC(a *app) *cobra.Command {
	var asJSON, trashOnly bool
	c := &cobra.Command{
		Use:   "gc",
		Short: "Remove what dead supervisors left behind",
		Long: `Removes the cgroups and network links of runs that have no live supervisor,
the stale pid files and sockets of supervisors that died, and the lock files
of workspaces that are gone. The services of forks that held live-forked
copies of a dead supervisor's processes (ended with it) are started again.
Runs whose supervisor died stay reported dead until tine start or tine stop.
It first sweeps every workspace whole (as the daemon does every 10
minutes, and any command does in a workspace where a command died): it
thaws a run that a command which died left frozen, finishes or undoes
what such a command journaled, remounts views a reboot unmounted, removes
discarded runs' directories and the fork point mounts and merge
directories such a command left, a line each on standard error. Last, it
empties the trash: what releases and discards committed to deleting.

With --trash it only empties the trash, waiting for another tine emptying
it: a tine release or discard that ran without the daemon starts one in
the background (unless TINE_TRASH=keep), so it returns once the files
are renamed away, before they are deleted.`,
		Example: `  tine gc
  tine gc --json`,
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if err := a.rootOnly(); err != nil {
				return err
			}
			if trashOnly {
				return a.emptyTrash(c.Context(), asJSON)
			}
			return a.withEngine(c.Context(), func(e *engine.Engine) error {
				if err := e.Sweep(c.Context()); err != nil {
					return err
				}
				res, err := runtime.Of(e).GC(c.Context())
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(res)
				}
				fmt.Fprintf(a.stdout, "removed %d cgroup(s), %d network link(s), %d dead supervisor(s)' files, %d stray lock file(s); restarted the services of %d fork(s)\n",
					len(res.Cgroups), len(res.Links), len(res.Supervisors), len(res.Locks), len(res.Restarted))
				return nil
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	c.Flags().BoolVar(&trashOnly, "trash", false, "only empty the trash (what releases and discards left to delete)")
	return c
}
