package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func newStats(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "stats RUN",
		Short: "Show a run's resource use",
		Long:  `Shows the memory, CPU time and process count of RUN's cgroup, and whether it is frozen.`,
		Example: `  tine stats source-1
  tine stats source-1 --json`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			ps, err := a.ps(c.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(map[string]any{"run": ps.Run.Name, "state": ps.State, "stats": ps.Stats})
			}
			if ps.Stats == nil {
				fmt.Fprintf(a.stdout, "%s: %s, no processes\n", ps.Run.Name, ps.State)
				return nil
			}
			s := ps.Stats
			fmt.Fprintf(a.stdout, "%s: %s\nmemory    %s (peak %s)\ncpu       %v\nprocesses %d\nfrozen    %v\n",
				ps.Run.Name, ps.State, size(s.MemoryBytes), size(s.MemoryPeakBytes), s.CPUUsage.Round(time.Millisecond), s.Pids, s.Frozen)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
