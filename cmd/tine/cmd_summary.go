package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/internal/display"
)

func newSummary(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "summary RUN",
		Short: "Show the evidence a fork-run gathered for one fork, and whether it is ready",
		Long: `Shows what the fork-run learned about RUN: its state, the agent's exit status,
output tail, tool calls and commands, tokens, cost and wall time, the test
command's result, what it changed, and its readiness: finished, tests passed
(or no test configured) and a clean merge dry-run into its parent, checked
again now for a live run. The agent's full output is in the file named by
agent_log.`,
		Example: `  tine summary app-2
  tine summary app-2 --json | jq .fork.test`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var s *forkrun.RunSummary
			err := a.remoteOr(c.Context(), func(cl *httpapi.Client) error {
				var err error
				s, err = cl.Summary(c.Context(), remoteRef(c.Context(), cl, args[0]))
				return err
			}, func(e *engine.Engine) (err error) {
				s, err = forkrun.Summarize(c.Context(), forkrun.NewHost(e), args[0])
				return err
			})
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(s)
			}
			a.printSummary(s)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return c
}

func (a *app) printSummary(s *forkrun.RunSummary) {
	f := s.Fork
	w := a.stdout
	fmt.Fprintf(w, "%s (group %s, run %s, fork-run %s)\n", s.Run, s.Group, s.RunState, f.State)
	if f.Approach != "" {
		fmt.Fprintf(w, "approach:  %s\n", display.Text(f.Approach))
	}
	if f.Reason != "" {
		fmt.Fprintf(w, "reason:    %s\n", display.Text(f.Reason))
	}
	ag := f.Agent
	exit := "—"
	if ag.ExitCode != nil {
		exit = fmt.Sprint(*ag.ExitCode)
	}
	fmt.Fprintf(w, "agent:     exit %s, result %s, %.1fs, %d tool call(s), %d command(s), %d tokens, $%.4f\n",
		exit, display.Text(dashIf(ag.Result)), float64(ag.WallMS)/1000, ag.ToolCallsTotal, ag.CommandsTotal, ag.Tokens.Total(), f.CostUSD)
	for _, cmd := range ag.Commands {
		fmt.Fprintf(w, "  $ %s\n", display.Text(clipLine(cmd, 100)))
	}
	if t := f.Test; t != nil {
		fmt.Fprintf(w, "tests:     %s (exit %d, %.1fs): %s\n", forkrun.TestWord(t), t.Exit, t.Seconds, display.Text(t.Command))
		for _, l := range lastLines(t.Output, 5) {
			fmt.Fprintf(w, "  | %s\n", l)
		}
	} else {
		fmt.Fprintln(w, "tests:     none configured")
	}
	fmt.Fprintf(w, "changes:   %d file(s), +%d -%d lines\n", f.FilesChanged, f.LinesAdded, f.LinesDeleted)
	printRefused(w, s.Refused)
	if lines := f.Evidence.Lines(); len(lines) > 0 {
		fmt.Fprintln(w, "evidence:")
		for _, l := range lines {
			fmt.Fprintf(w, "  %s\n", display.Text(l))
		}
	}
	if s.Score != nil {
		fmt.Fprintf(w, "score:     %.2f%s\n", *s.Score, map[bool]string{true: " (the judge's winner)", false: ""}[s.Winner])
	}
	if s.Resolved != "" {
		fmt.Fprintf(w, "group:     resolved: %s\n", display.Text(s.Resolved))
	}
	if s.Ready {
		fmt.Fprintln(w, "ready:     yes")
	} else {
		fmt.Fprintf(w, "ready:     no: %s\n", display.Text(s.NotReady))
	}
	if tail := lastLines(ag.Output, 8); len(tail) > 0 {
		fmt.Fprintln(w, "output (last lines):")
		for _, l := range tail {
			fmt.Fprintf(w, "  | %s\n", l)
		}
	}
	if f.AgentLog != "" {
		fmt.Fprintf(w, "full log:  %s\n", display.Path(f.AgentLog))
	}
}

func dashIf(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// lastLines returns the last n non-empty lines of s, clipped and escaped
// (display.Text) for a terminal.
func lastLines(s string, n int) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, display.Text(clipLine(l, 160)))
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out
}
