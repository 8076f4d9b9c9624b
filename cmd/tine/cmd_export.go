package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/evidence"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/internal/display"
)

func newExport(a *app) *cobra.Command {
	var format string
	var asJSON bool
	c := &cobra.Command{
		Use:   "export GROUP [--format md|json] [--json]",
		Short: "A report of a group of forks, to attach to a pull request",
		Long: `Prints a report of GROUP: the fork point, each fork side by side (approach,
state, files and lines changed, readiness to merge), the recommended winner
and why, each fork's changed paths and history, and the approvals asked for.
--format md (default) is Markdown for a pull request; json (or --json, as
elsewhere) is the same data.`,
		Example: `  tine export g1a2b3c4d > report.md
  tine export g1a2b3c4d --format json`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if asJSON {
				format = "json"
			}
			if format != "md" && format != "json" {
				return usageErr(c, "--format is md or json")
			}
			var x *forkrun.Export
			err := a.remoteOr(c.Context(), func(cl *httpapi.Client) error {
				var err error
				x, err = cl.Export(c.Context(), args[0])
				return err
			}, func(e *engine.Engine) (err error) {
				x, err = forkrun.ExportGroup(c.Context(), forkrun.NewHost(e), args[0])
				return err
			})
			if err != nil {
				return err
			}
			if format == "json" {
				return a.printJSON(x)
			}
			writeReport(a.stdout, x.GroupReport, x.Evidence)
			return nil
		},
	}
	c.Flags().StringVar(&format, "format", "md", "md or json")
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON (--format json)")
	return c
}

// writeReport renders rep as Markdown. Text from runs (approaches, paths)
// is escaped so it cannot break the tables nor reach a terminal raw:
// paths as display.Path shows them, other text through md.
func writeReport(w io.Writer, rep *engine.GroupReport, ev map[string]*evidence.Fork) {
	c := rep.Comparison
	fmt.Fprintf(w, "# tine: group %s of %s\n\n", rep.Group.ID, md(rep.Workspace.Name))
	fmt.Fprintf(w, "Forked from **%s** at version `%s` (%s)", md(rep.Parent.Name), rep.ForkPoint.ID,
		rep.ForkPoint.CreatedAt.UTC().Format(time.RFC3339))
	if len(rep.Forks) > 0 && rep.Forks[0].Run.GitHead != "" {
		fmt.Fprintf(w, ", git `%s`", short(rep.Forks[0].Run.GitHead))
	}
	fmt.Fprintf(w, "; report made %s.\n\n", rep.GeneratedAt.Format(time.RFC3339))
	fmt.Fprintln(w, "| fork | approach | state | files | lines | ready |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---|")
	for _, f := range c.Forks {
		mark := ""
		if f.Run.ID == c.Recommended {
			mark = " ★"
		}
		ready := "yes"
		if !f.Ready {
			ready = "no: " + md(f.NotReady)
		}
		fmt.Fprintf(w, "| %s%s | %s | %s | %d | +%d −%d | %s |\n", md(f.Run.Name), mark, md(f.Run.Approach),
			stateOf(f.Run), f.Changed, f.LinesAdded, f.LinesDeleted, ready)
	}
	if c.Recommended != "" {
		fmt.Fprintf(w, "\n**Recommended:** %s — %s\n", md(nameOf(rep, c.Recommended)), md(c.Rationale))
	} else {
		fmt.Fprintf(w, "\n**No recommendation:** %s\n", md(c.Rationale))
	}
	for _, f := range rep.Forks {
		writeForkSection(w, f, ev[f.Run.Name])
	}
	writeApprovals(w, rep)
}

func writeForkSection(w io.Writer, f engine.ForkReport, ev *evidence.Fork) {
	fmt.Fprintf(w, "\n## %s", md(f.Run.Name))
	if f.Run.Approach != "" {
		fmt.Fprintf(w, ": %s", md(f.Run.Approach))
	}
	fmt.Fprintf(w, "\n\n%d changed path(s)", len(f.Changes))
	if len(f.Changes) == 0 {
		fmt.Fprintln(w, ".")
	} else {
		fmt.Fprintln(w, ":")
		fmt.Fprintln(w)
		for _, ch := range f.Changes {
			fmt.Fprintf(w, "- `%s` %s (%s, %d → %d bytes)\n", strings.ReplaceAll(display.Path(ch.Path), "`", "'"), ch.Kind, ch.Type, ch.OldSize, ch.Size)
		}
	}
	if lines := ev.Lines(); len(lines) > 0 {
		fmt.Fprintln(w, "\nEvidence:")
		for _, l := range lines {
			fmt.Fprintf(w, "- %s\n", md(l))
		}
	}
	fmt.Fprintln(w, "\nHistory:")
	for _, ev := range f.Events {
		fmt.Fprintf(w, "- %s %s\n", ev.Time.UTC().Format(time.RFC3339), ev.Kind)
	}
}

func writeApprovals(w io.Writer, rep *engine.GroupReport) {
	if len(rep.Approvals) == 0 {
		return
	}
	fmt.Fprintln(w, "\n## Approvals")
	fmt.Fprintln(w)
	for _, ap := range rep.Approvals {
		by := ""
		if ap.DecidedBy != "" {
			by = " by " + md(ap.DecidedBy)
		}
		fmt.Fprintf(w, "- `%s` %s of %s: %s%s\n", ap.ID, ap.Action, md(nameOf(rep, ap.Run)), ap.State, by)
	}
}

func nameOf(rep *engine.GroupReport, id string) string {
	for _, f := range rep.Forks {
		if f.Run.ID == id {
			return f.Run.Name
		}
	}
	return id
}

func stateOf(r *tine.Run) string {
	if r.Resolution != "" {
		return string(r.State) + ", " + string(r.Resolution)
	}
	return string(r.State)
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// md escapes text for a Markdown table cell or line: control characters
// and bytes that are not UTF-8 first (display.Text), then Markdown.
func md(s string) string {
	s = display.Text(s)
	r := strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;", "*", `\*`, "_", `\_`, "`", "'", "[", `\[`, "]", `\]`)
	return r.Replace(s)
}
