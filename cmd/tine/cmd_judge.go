package main

import (
	"fmt"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/httpapi"
)

func newJudge(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "judge",
		Short: "How fork-run's judges fared with the people who chose",
	}
	c.AddCommand(newJudgeStats(a), newJudgeResetWeights(a))
	return c
}

func newJudgeStats(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "stats [--json]",
		Short: "Agreement of each judge's recommendations with people's choices, per judge and per week",
		Long: `Reads the state directory's history.jsonl (through the daemon, a normal
user's own workspaces' groups) and counts, for every fork-run group resolved, whether a person confirmed the recommended fork, chose
another, discarded them all though one was recommended, or decided where
the judge named none; groups fork-run merged itself are counted apart.
Agreement is the confirmed share of the first three. Each workspace's
weights of the heuristic judge's evidence features follow: the built-in
ones until a person chooses a fork other than the recommended one, which
moves them toward what the chosen fork had (tine judge reset-weights).`,
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, _ []string) error {
			var st forkrun.JudgeStats
			err := a.remoteOr(c.Context(), func(cl *httpapi.Client) (err error) {
				st, err = cl.JudgeStats(c.Context())
				return err
			}, func(e *engine.Engine) (err error) {
				st, err = forkrun.JudgeStatsOf(c.Context(), e, nil)
				return err
			})
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(st)
			}
			return a.printJudgeStats(st)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the tallies as JSON")
	return c
}

func (a *app) printJudgeStats(st forkrun.JudgeStats) error {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JUDGE/WEEK\tGROUPS\tAUTO\tCONFIRMED\tOVERRIDDEN\tREJECTED\tUNRECOMMENDED\tAGREEMENT")
	row := func(name string, t forkrun.Tally) {
		agree := "—"
		if t.Confirmed+t.Overridden+t.Rejected > 0 {
			agree = fmt.Sprintf("%.0f%%", 100*t.Agreement)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", name, t.Groups, t.Automatic, t.Confirmed, t.Overridden, t.Rejected, t.Unrecommended, agree)
	}
	judges := make([]string, 0, len(st.Judges))
	for j := range st.Judges {
		judges = append(judges, j)
	}
	sort.Strings(judges)
	for _, j := range judges {
		row(j, st.Judges[j])
	}
	for _, w := range st.Weeks {
		row(w.Week, w.Tally)
	}
	row("all", st.All)
	if err := tw.Flush(); err != nil {
		return err
	}
	names := make([]string, 0, len(st.Weights))
	for n := range st.Weights {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		w := st.Weights[n]
		from := "built-in"
		if w.Updates > 0 {
			from = fmt.Sprintf("learned from %d choices", w.Updates)
		}
		fmt.Fprintf(a.stdout, "weights of %s (%s): %s\n", n, from, w.Weights)
	}
	return nil
}

func newJudgeResetWeights(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "reset-weights WORKSPACE",
		Short: "Forget the heuristic judge's weights learned in WORKSPACE: the built-in ones apply again",
		Args:  exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			err := a.remoteOr(c.Context(), func(cl *httpapi.Client) error {
				return cl.ResetJudgeWeights(c.Context(), args[0])
			}, func(e *engine.Engine) error {
				return control.Of(e).ResetJudgeWeights(c.Context(), args[0])
			})
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(map[string]any{"workspace": args[0], "reset": true})
			}
			fmt.Fprintf(a.stdout, "weights of %s reset to the built-in ones\n", args[0])
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the outcome as JSON")
	return c
}
