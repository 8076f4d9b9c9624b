package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/desktop"
	"github.com/tinehq/tine/runtime"
)

func newStats(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "stats RUN",
		Short: "Show a run's resource use",
		Long: `Shows the memory, CPU time and process count of RUN's cgroup, and whether it is
frozen; for a run with a display, the resident memory of its display stack
(the X server and the window manager; the programs on it are not counted).`,
		Example: `  tine stats source-1
  tine stats source-1 --json`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			ps, err := a.ps(c.Context(), args[0])
			if err != nil {
				return err
			}
			display, hasDisplay := displayRSS(ps.Processes)
			if asJSON {
				out := map[string]any{"run": ps.Run.Name, "state": ps.State, "stats": ps.Stats}
				if hasDisplay {
					out["display_rss_bytes"] = display
				}
				return a.printJSON(out)
			}
			if ps.Stats == nil {
				fmt.Fprintf(a.stdout, "%s: %s, no processes\n", ps.Run.Name, ps.State)
				return nil
			}
			s := ps.Stats
			fmt.Fprintf(a.stdout, "%s: %s\nmemory    %s (peak %s)\ncpu       %v\nprocesses %d\nfrozen    %v\n",
				ps.Run.Name, ps.State, size(s.MemoryBytes), size(s.MemoryPeakBytes), s.CPUUsage.Round(time.Millisecond), s.Pids, s.Frozen)
			if hasDisplay {
				fmt.Fprintf(a.stdout, "display   %s (X server and window manager, resident)\n", size(display))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

// displayRSS sums the resident memory of the display stack's processes
// among procs, and says whether there are any.
func displayRSS(procs []runtime.Process) (int64, bool) {
	var sum int64
	found := false
	for _, p := range procs {
		if desktop.Reserved(p.Service) {
			sum, found = sum+p.RSSBytes, true
		}
	}
	return sum, found
}
