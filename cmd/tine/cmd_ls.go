package main

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/display"
	"github.com/tinehq/tine/runtime"
)

// runRow is one line of tine ls.
type runRow struct {
	WorkspaceName string `json:"workspace_name"`
	*tine.Run
	ParentName string `json:"parent_name,omitempty"`
	Path       string `json:"path,omitempty"`
	Processes  string `json:"processes,omitempty"` // running, stopped or dead, as checked now
}

func newLs(a *app) *cobra.Command {
	var asJSON, all bool
	c := &cobra.Command{
		Use:   "ls [WORKSPACE]",
		Short: "List runs",
		Long:  `Lists the live runs of every workspace, or of WORKSPACE; --all adds discarded ones.`,
		Example: `  tine ls
  tine ls --all --json app`,
		Args: maxArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if a.remote() {
				rows, err := a.remoteRuns(c.Context(), firstArg(args), all)
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(rows)
				}
				return a.printRuns(rows)
			}
			err := a.withEngine(c.Context(), func(e *engine.Engine) error {
				read := e.LiveRecords
				if all {
					read = e.Records
				}
				states, err := read(c.Context(), firstArg(args))
				if err != nil {
					return err
				}
				rows := []runRow{}
				for _, s := range states {
					names := map[string]string{}
					for _, r := range s.Runs {
						names[r.ID] = r.Name
					}
					for _, r := range s.Runs {
						if all || r.Active() {
							row := runRow{WorkspaceName: s.Workspace.Name, Run: r, ParentName: names[r.Parent]}
							if r.Active() {
								row.Path = e.Path(s.Workspace, r)
								row.Processes, _ = runtime.Of(e).ProcState(engine.Ref{Workspace: s.Workspace, Run: r})
							}
							rows = append(rows, row)
						}
					}
				}
				if asJSON {
					return a.printJSON(rows)
				}
				return a.printRuns(rows)
			})
			if errors.Is(err, errNoState) && firstArg(args) == "" {
				if asJSON {
					return a.printJSON([]runRow{})
				}
				fmt.Fprintf(a.stderr, "no runs: nothing is under management in %s; tine init DIR takes a directory under management\n", a.home)
				return nil
			}
			return err
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	c.Flags().BoolVar(&all, "all", false, "include discarded runs")
	return c
}

func (a *app) printRuns(rows []runRow) error {
	if len(rows) == 0 {
		fmt.Fprintln(a.stderr, "no runs: tine init DIR takes a directory under management")
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKSPACE\tNAME\tID\tROLE\tSTATE\tPROCESSES\tADDRESS\tPARENT\tAPPROACH\tPATH")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s%s\t%s\t%s\t%s\t%s\t%s\n", r.WorkspaceName, r.Name, r.ID, r.Role, r.State, resolved(r.Run),
			dash(r.Processes), dash(shownAddr(r)), dash(r.ParentName), display.Text(dash(r.Approach)), display.Path(dash(r.Path)))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func firstArg(args []string) string {
	if len(args) > 0 {
		return args[0]
	}
	return ""
}

// shownAddr is a run's address while it runs (the store keeps it across
// restarts, so a run keeps its identity).
func shownAddr(r runRow) string {
	if r.Processes != runtime.ProcRunning {
		return ""
	}
	return r.Addr
}
