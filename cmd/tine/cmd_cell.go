package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/display"
	"github.com/tinehq/tine/runtime"
)

func newCell(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "cell",
		Short: "Fresh capability cells: one command in a new confined fork, its outputs promoted by choice",
		Long: `A cell is a new, short-lived fork made from a recorded version (or its
parent's files now) that runs exactly one command, may write only the paths
given with --write (and its own /tmp), reaches no network but what --net
grants, gets none of the parent's secrets, and is killed after --ttl. What it
did (exit status, changed paths, refused connections) is recorded with it;
its outputs reach a run only through tine cell promote, a merge of the chosen
paths. Needs Landlock, and root or the system daemon (a normal user's cells are
made by it, as theirs); a person's command, refused from inside a run.`,
	}
	c.AddCommand(newCellRun(a), newCellShow(a), newCellPromote(a), newCellReplay(a))
	return c
}

func newCellRun(a *app) *cobra.Command {
	var o runtime.CellOptions
	var asJSON bool
	c := &cobra.Command{
		Use:   "run RUN --write PATH... [--from VERSION] [--net HOST:PORT...] [--ttl D] -- CMD [ARG...]",
		Short: "Run one command in a new cell of RUN",
		Example: `  tine cell run app/source --write dist -- npm run build
  tine cell run app/source --from v1a2b3c4d --write report.txt --net api.example.com:443 --ttl 2m -- ./gen-report`,
		Args: minArgs(2, "RUN, then -- and the command"),
		RunE: func(c *cobra.Command, args []string) error {
			if c.ArgsLenAtDash() != 1 {
				return usageErr(c, "cell run takes RUN, then -- and the command")
			}
			o.Args = args[1:]
			return a.withOps(c.Context(), func(op ops, _ *engine.Engine) error {
				cell, err := op.RunCell(c.Context(), args[0], o)
				return a.showCell(cell, err, asJSON)
			})
		},
	}
	c.Flags().StringArrayVar(&o.Write, "write", nil, "a workspace-relative path the command may write (repeatable; nothing else is writable)")
	c.Flags().StringVar(&o.From, "from", "", "the version to make the cell from (default: RUN's files now)")
	c.Flags().StringArrayVar(&o.Net, "net", nil, "a destination the cell may reach: host[:port], a.b.c.d[/n][:port] (repeatable; default none)")
	c.Flags().DurationVar(&o.TTL, "ttl", runtime.DefaultCellTTL, "kill the command after this long")
	c.Flags().BoolVar(&asJSON, "json", false, "print the cell's record as JSON")
	return c
}

func newCellShow(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "show CELL",
		Short: "Show what a cell was asked and what it did",
		Args:  exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if a.remote() {
				cell, err := a.daemon().Cell(c.Context(), remoteRef(c.Context(), a.daemon(), args[0]))
				return a.showCell(cell, err, asJSON)
			}
			return a.withEngine(c.Context(), func(e *engine.Engine) error {
				cell, err := runtime.Of(e).CellOf(c.Context(), args[0])
				return a.showCell(cell, err, asJSON)
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return c
}

func newCellPromote(a *app) *cobra.Command {
	var paths []string
	var dryRun, asJSON bool
	c := &cobra.Command{
		Use:     "promote CELL --path PATH... [--dry-run]",
		Short:   "Carry chosen outputs of a cell into its parent (a merge of those paths)",
		Example: `  tine cell promote source-3 --path dist --dry-run`,
		Args:    exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return a.withOps(c.Context(), func(op ops, _ *engine.Engine) error {
				res, err := op.PromoteCell(c.Context(), args[0], paths, dryRun)
				if res != nil {
					if perr := a.printMerge(res, asJSON, false); perr != nil {
						return perr
					}
				}
				return err
			})
		},
	}
	c.Flags().StringArrayVar(&paths, "path", nil, "an output to carry (workspace-relative, repeatable)")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "plan only; write nothing")
	c.Flags().BoolVar(&asJSON, "json", false, "print the plan and outcome as JSON")
	return c
}

func newCellReplay(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "replay CELL",
		Short: "Run a cell's command again in a new cell, if its inputs are unchanged",
		Long: `Makes a new cell with CELL's options. A cell made from a version replays
always (versions do not change); one made from its parent's files replays only
while the parent's files are exactly those it was made from (exit 5 if not).`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return a.withOps(c.Context(), func(op ops, _ *engine.Engine) error {
				cell, err := op.ReplayCell(c.Context(), args[0])
				return a.showCell(cell, err, asJSON)
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the new cell's record as JSON")
	return c
}

// showCell prints cell (as JSON with asJSON) unless err: a cell that
// could not be run or read.
func (a *app) showCell(cell *runtime.Cell, err error, asJSON bool) error {
	if cell == nil || err != nil {
		return err
	}
	if asJSON {
		return a.printJSON(cell)
	}
	a.printCell(cell)
	return nil
}

// printCell says what a cell did.
func (a *app) printCell(c *runtime.Cell) {
	name := c.Name
	if name == "" {
		name = c.Run
	}
	w := a.stdout
	fmt.Fprintf(w, "cell %s (%s) from version %s: %s\n", name, c.Run, c.Base, display.Text(strings.Join(c.Options.Args, " ")))
	status := fmt.Sprintf("exit %d", c.Exit)
	if c.TimedOut {
		status = "killed after " + c.Options.TTL.String()
	}
	fmt.Fprintf(w, "  %s in %.1fs; may write %s; network: %s\n", status, c.Seconds,
		display.Text(strings.Join(c.Options.Write, ", ")), display.Text(orNone(c.Options.Net)))
	fmt.Fprintf(w, "  changed %d path(s)\n", len(c.Changes))
	for _, ch := range c.Changes {
		fmt.Fprintf(w, "    %-9s %s\n", ch.Kind, display.Path(ch.Path))
	}
	printRefused(w, c.Refused)
	out := c.Stdout // what the command said: its output, or why it failed
	if c.Exit != 0 && c.Stderr != "" {
		out = c.Stderr
	}
	if lines := lastLines(out, 5); len(lines) > 0 {
		fmt.Fprintf(w, "  its output, last %d line(s):\n", len(lines))
		for _, l := range lines {
			fmt.Fprintf(w, "  | %s\n", l)
		}
	}
	fmt.Fprintf(w, "promote outputs with: tine cell promote %s --path PATH [--dry-run]\n", name)
}

func orNone(ss []string) string {
	if len(ss) == 0 {
		return "none"
	}
	return strings.Join(ss, ", ")
}
