package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/display"
)

func newCombine(a *app) *cobra.Command {
	var takes []string
	var dryRun, asJSON bool
	c := &cobra.Command{
		Use:   "combine GROUP --take FORK:PATH... [--dry-run]",
		Short: "Merge chosen paths of several forks of GROUP into its parent, all at once",
		Long: `Plans, for each FORK named, a merge of its chosen PATHs into GROUP's parent
(as tine merge FORK --paths PATH... would), joins the plans, and applies
them as one transaction: every part lands or none does, even across a
crash. A path taken from two forks (the same path, or one below the
other, but for a directory both keep) is a conflict, reported per path
with the forks it came from, as is any conflict with the parent; then the
plan is printed and nothing is written (exit status 9). The forks are
left as they are: resolve them afterwards with tine choose GROUP or tine
discard. --dry-run only plans and checks.`,
		Example: `  tine combine 01HX... --take source-1:src/parser --take source-3:docs/README.md --dry-run
  tine combine 01HX... --take source-2:go.mod --take source-2:go.sum --take source-1:cmd --json`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			ts, err := parseTakes(takes)
			if err != nil {
				return err
			}
			return a.withOps(c.Context(), func(op ops, _ *engine.Engine) error {
				res, err := op.Combine(c.Context(), args[0], ts, dryRun)
				if res != nil && res.Plan != nil {
					if perr := a.printCombine(res, asJSON); perr != nil {
						return perr
					}
				}
				return err
			})
		},
	}
	c.Flags().StringArrayVar(&takes, "take", nil, "FORK:PATH, a workspace-relative path to take from a fork of GROUP (repeatable)")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "plan and check only; write nothing")
	c.Flags().BoolVar(&asJSON, "json", false, "print the plan and outcome as JSON")
	return c
}

// parseTakes reads --take FORK:PATH values.
func parseTakes(takes []string) ([]engine.Take, error) {
	if len(takes) == 0 {
		return nil, fmt.Errorf("combine needs at least one --take FORK:PATH: %w", tine.ErrInvalid)
	}
	out := make([]engine.Take, 0, len(takes))
	for _, t := range takes {
		fork, path, ok := strings.Cut(t, ":")
		if !ok || fork == "" || path == "" {
			return nil, fmt.Errorf("--take %q: want FORK:PATH: %w", t, tine.ErrInvalid)
		}
		out = append(out, engine.Take{Fork: fork, Path: path})
	}
	return out, nil
}

func (a *app) printCombine(res *engine.CombineResult, asJSON bool) error {
	if asJSON {
		return a.printJSON(res)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	for i, en := range res.Plan.Entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d bytes\t%s\n", en.Action, en.Change, display.Path(en.Path), res.Forks[i], en.Bytes, display.Text(en.Reason))
	}
	for _, p := range res.Parts {
		for _, l := range p.Plan.LeftOut {
			fmt.Fprintf(tw, "left_out\t%s\t%s\t%s\t0 bytes\t%s\n", l.Change, display.Path(l.Path), p.Run.Name, l.Reason)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	n, forks := len(res.Plan.Entries), len(res.Parts)
	switch {
	case !res.Plan.Clean():
		fmt.Fprintf(a.stdout, "%d path(s) from %d fork(s), %d in conflict; nothing written\n", n, forks, len(res.Plan.Conflicts()))
	case res.Applied:
		fmt.Fprintf(a.stdout, "combined %d path(s) from %d fork(s) into %s\n", n, forks, res.Target.Name)
	case res.DryRun:
		fmt.Fprintf(a.stdout, "%d path(s) from %d fork(s) would combine cleanly into %s (dry run)\n", n, forks, res.Target.Name)
	}
	printLeftOut(a.stdout, res.Plan, "tine merge FORK --paths PATH --include-git-internals")
	return nil
}
