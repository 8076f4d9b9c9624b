package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
)

func newDiscard(a *app) *cobra.Command {
	var unmerged, whileRunning, force, asJSON bool
	c := &cobra.Command{
		Use:   "discard RUN|GROUP...",
		Short: "Stop a fork (or every fork of a group) and remove its files",
		Long: `Marks the run (or each live run of the group) discarded, then unmounts it and
removes its delta. Lineage, versions and events remain. A run whose changes
were never merged or promoted is refused (exit status 6) unless
--unmerged; without supervisors (not root), one where tine exec commands
run is refused (exit status 8) unless --while-running. Several runs or
groups are discarded in the order given; the first that fails stops the
rest (those before it stay discarded).`,
		Example: `  tine discard source-2
  tine discard source-2 source-3
  tine discard g3xk9pq2a --unmerged`,
		Args: minArgs(1, "one or more RUN or GROUP"),
		RunE: func(c *cobra.Command, args []string) error {
			ctx, stop := interruptible(c.Context())
			defer stop()
			return a.withOps(ctx, func(op ops, e *engine.Engine) error {
				all := []*tine.Run{}
				var err error
				for _, ref := range args {
					var runs []*tine.Run
					runs, err = op.Discard(a.progress(ctx, "discarding "+ref, asJSON), ref, unmerged || whileRunning || force)
					a.progressDone()
					all = append(all, runs...)
					if !asJSON {
						for _, r := range runs {
							fmt.Fprintf(a.stdout, "discarded %s (%s)\n", r.Name, r.ID)
						}
					}
					if err != nil || ctx.Err() != nil {
						break
					}
				}
				if asJSON && (err == nil || len(all) > 0) {
					if jerr := a.printJSON(all); jerr != nil {
						return jerr
					}
				}
				return interrupted(ctx, err, err == nil, discardOutcome(args, all))
			})
		},
	}
	c.Flags().BoolVar(&unmerged, "unmerged", false, "discard even work never merged or promoted")
	c.Flags().BoolVar(&whileRunning, "while-running", false, "discard even while tine exec commands run in the run (no supervisor)")
	deprecatedForce(c, &force, "--unmerged (or --while-running)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the discarded runs as JSON")
	return c
}

// discardOutcome says what an interrupted discard of refs did, runs being
// those it discarded.
func discardOutcome(refs []string, runs []*tine.Run) outcome {
	names := make([]string, len(runs))
	for i, r := range runs {
		names[i] = r.Name
	}
	o := outcome{before: "nothing was discarded", after: "the discard was committed: " + strings.Join(names, ", ") + " discarded",
		watch: "tine ls shows whether " + strings.Join(refs, ", ") + " are discarded"}
	if len(runs) > 0 {
		o.before = "nothing more was discarded after " + strings.Join(names, ", ")
	}
	return o
}
