package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/engine"
)

func newChoose(a *app) *cobra.Command {
	var merge, promote, noCommits, discardAll, asJSON bool
	c := &cobra.Command{
		Use:   "choose GROUP [RUN --merge|--promote | --discard-all]",
		Short: "Resolve a group: keep one fork, discard the rest",
		Long: `Merges RUN into its parent (--merge) or promotes it (--promote); only after
that succeeded are the group's other live forks discarded. --discard-all
discards every fork of the group.

--merge is tine merge's: in a git workspace RUN's commits since the fork
point land in the parent's history with their messages (replayed onto its
HEAD), a conflict when one does not apply; --no-commits squashes them into
the parent's working tree instead.`,
		Example: `  tine choose g3xk9pq2a source-2 --merge
  tine choose g3xk9pq2a --discard-all`,
		Args: maxArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			run := ""
			if len(args) == 2 {
				run = args[1]
			}
			switch {
			case len(args) == 0:
				return usageErr(c, "choose needs GROUP")
			case discardAll && (run != "" || merge || promote):
				return usageErr(c, "--discard-all takes no RUN, --merge or --promote")
			case !discardAll && (run == "" || merge == promote):
				return usageErr(c, "choose needs RUN with exactly one of --merge or --promote, or --discard-all")
			case noCommits && !merge:
				return usageErr(c, "--no-commits goes with --merge")
			}
			return a.withOps(c.Context(), func(op ops, e *engine.Engine) error {
				res, err := op.Choose(c.Context(), args[0], run, engine.ChooseOptions{Promote: promote, NoCommits: noCommits})
				if res != nil && asJSON {
					if jerr := a.printJSON(res); jerr != nil {
						return jerr
					}
				} else if res != nil {
					if res.Merge != nil {
						if perr := a.printMerge(res.Merge, false, false); perr != nil {
							return perr
						}
					}
					if res.Promote != nil {
						fmt.Fprintf(a.stdout, "promoted %s\n", res.Promote.Run.Name)
					}
					for _, r := range res.Discarded {
						fmt.Fprintf(a.stdout, "discarded %s (%s)\n", r.Name, r.ID)
					}
				}
				return err
			})
		},
	}
	c.Flags().BoolVar(&merge, "merge", false, "merge RUN into its parent")
	c.Flags().BoolVar(&promote, "promote", false, "promote RUN to source")
	c.Flags().BoolVar(&noCommits, "no-commits", false, "with --merge: leave RUN's commits out of the parent's history, their changes uncommitted")
	c.Flags().BoolVar(&discardAll, "discard-all", false, "discard every fork of the group")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
