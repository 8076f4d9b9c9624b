package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/egress"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/internal/display"
)

// runSummary is what tine summary prints: one fork's stored evidence and
// its readiness now.
type runSummary struct {
	Run       string        `json:"run"`
	Group     string        `json:"group"`
	RunState  tine.State    `json:"run_state"` // active, merged, discarded, ...
	Fork      *forkrun.Fork `json:"fork"`
	Ready     bool          `json:"ready"`
	NotReady  string        `json:"not_ready,omitempty"`
	Winner    bool          `json:"winner"`
	Score     *float64      `json:"score,omitempty"`
	Outcome   string        `json:"group_outcome"`
	Resolved  string        `json:"group_resolved,omitempty"` // "merge source-2", "discard", once resolved
	Rationale string        `json:"rationale,omitempty"`
	// Refused is what the fork's egress policy refused: connections and
	// names, each once.
	Refused []egress.Record `json:"refused,omitempty"`
}

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
			return a.withEngine(c.Context(), func(e *engine.Engine) error {
				s, err := summarize(c.Context(), e, args[0])
				if err != nil {
					return err
				}
				if asJSON {
					return a.printJSON(s)
				}
				a.printSummary(s)
				return nil
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print as JSON")
	return c
}

func summarize(ctx context.Context, e *engine.Engine, ref string) (*runSummary, error) {
	r, err := e.FindRun(ctx, ref)
	if err != nil {
		return nil, err
	}
	if r.Run.Group == "" {
		return nil, fmt.Errorf("%s is not a fork (it has no group): %w", r.Run.Name, tine.ErrInvalid)
	}
	rep, err := forkrun.Load(e, r.Workspace.ID, r.Run.Group)
	if err != nil {
		return nil, err
	}
	f := rep.Fork(r.Run.ID)
	if f == nil {
		return nil, fmt.Errorf("%s is not in fork-run %s: %w", r.Run.Name, rep.Group, tine.ErrNotFound)
	}
	s := &runSummary{Run: r.Run.Name, Group: rep.Group, RunState: r.Run.State, Fork: f, Ready: f.Ready,
		NotReady: f.NotReady, Winner: rep.Winner == f.Name, Outcome: rep.Outcome}
	s.Refused, _ = e.Refusals(ctx, r.Run.ID)
	if v := rep.Verdict; v != nil {
		if sc, ok := v.Scores[f.Run]; ok {
			s.Score = &sc
		}
		s.Rationale = v.Rationale
	}
	if r.Run.Live() && r.Run.Resolution == "" && f.Ready {
		// The source may have moved since: check the merge again.
		c, err := e.Compare(ctx, rep.Group)
		if err != nil {
			return nil, err
		}
		for _, fs := range c.Forks {
			if fs.Run.ID == f.Run && !fs.Ready {
				s.Ready, s.NotReady = false, fs.NotReady
			}
		}
	}
	switch {
	case !r.Run.Live():
		s.Ready, s.NotReady = false, "run is "+string(r.Run.State)
	case r.Run.Resolution != "":
		s.Ready, s.NotReady = false, "already "+string(r.Run.Resolution)
	}
	if h := rep.Resolution; h != nil {
		s.Resolved = h.Action
		if h.Chosen != "" {
			s.Resolved += " " + h.Chosen
		}
	}
	return s, nil
}

func (a *app) printSummary(s *runSummary) {
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
