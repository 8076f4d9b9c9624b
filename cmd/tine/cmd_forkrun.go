package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/internal/display"
)

// forkRunFlags are fork-run's command line; unset flags leave tine.toml's
// values.
type forkRunFlags struct {
	prompt, promptFile        string
	n                         int
	approaches                []string
	agentName, agentCmd       string
	test, holdout, regression string
	holdoutDir                string
	checks                    []string
	testTimeout, agentTO      time.Duration
	budget, aggregate         float64
	mode, judgeKind           string
	threshold                 float64
	parallel                  int
	configFile, live, session string
	fresh, asJSON             bool
	stopEarly, synthesize     bool
}

func newForkRun(a *app) *cobra.Command {
	var fl forkRunFlags
	c := &cobra.Command{
		Use:   "fork-run RUN --prompt TEXT [-n N] [--approach TEXT]...",
		Short: "Run one task as N competing forks, judge them and keep the best",
		Long: `Forks RUN into N forks, starts an agent in each with its own approach (the
i-th --approach; forks beyond the approaches get none), streams each agent's
output into evidence and cost, runs the test command in every fork (killing
its whole process tree at --test-timeout), lets the judge score the forks
that finished, and resolves the group by --merge-mode:

  auto                merge a winner that clears the confidence threshold (and
                      is ready: tests passed, clean merge) into RUN, discard the rest
  auto_with_fallback  pick a winner and wait for: tine choose GROUP WINNER --merge (default)
  vote                ask the judge 3 times, take the majority, then as auto
  manual              only report

Budgets: --budget caps each fork, --aggregate-budget all forks together; a
fork that crosses a cap is stopped (budget_killed) and is not judged. A
merge conflict at resolution is reported and nothing is written.

Defaults come from [fork], [agent.NAME], [judge.llm] and [[account]] in the
workspace's tine.toml (or --config); flags override them. On a terminal a
live display shows one line per fork; otherwise progress lines. Needs root.

Exit status: 0 when the fork-run ended (merged, awaiting a choice or
reported), 9 when the winner's merge conflicted, 1 when no fork finished or
the judge failed, 2 for bad flags, 7 when the agent's binary is missing,
130 when interrupted (the agents are killed, the forks kept).`,
		Example: `  tine fork-run app/source --prompt "fix the failing test" -n 3 \
      --approach "minimal patch" --approach "rewrite the parser" --test "go test ./..."
  tine fork-run source --prompt-file task.md --agent codex --budget 2 --aggregate-budget 5
  tine fork-run app/source --prompt "make it faster" --agent-cmd ./try.sh -n 4 --merge-mode manual --json`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if a.remote() {
				if fl.configFile != "" {
					return usageErr(c, "--config is not read through the daemon: it reads the workspace's tine.toml")
				}
				req, err := forkRunRequest(c, fl)
				if err != nil {
					return err
				}
				return a.remoteForkRun(ctx, args[0], req, fl.asJSON)
			}
			return a.withEngine(ctx, func(e *engine.Engine) error {
				o, err := a.forkRunOptions(ctx, c, e, args[0], fl)
				if err != nil {
					return err
				}
				return a.forkRun(ctx, e, o, fl.asJSON)
			})
		},
	}
	f := c.Flags()
	f.StringVar(&fl.prompt, "prompt", "", "the task given to every agent")
	f.StringVar(&fl.promptFile, "prompt-file", "", "read the task from a file (- for standard input)")
	f.IntVarP(&fl.n, "copies", "n", 0, "number of forks (default: the number of approaches, else 3)")
	f.SetNormalizeFunc(oldFlagNames) // --n, as before -n/--copies
	f.StringArrayVar(&fl.approaches, "approach", nil, "approach of the next fork (repeatable)")
	f.StringVar(&fl.agentName, "agent", "", "agent: claude, codex, command or an [agent.NAME] of tine.toml (default [fork] agent, else claude)")
	f.StringVar(&fl.agentCmd, "agent-cmd", "", "run this shell command as the agent (sh -c, at the workspace path, with TINE_PROMPT, TINE_APPROACH, TINE_RUN, TINE_FORK_INDEX; it reports cost by printing {\"tine_cost_usd\": X} lines)")
	f.StringVar(&fl.test, "test", "", "test command run by sh -c in each fork once its agent finished")
	f.StringVar(&fl.holdout, "holdout-test", "", "holdout command run by sh -c in each fork after the agents ended, never shown to them (keep its files in --holdout-dir); evidence for the judge")
	f.StringVar(&fl.holdoutDir, "holdout-dir", "", "directory outside the workspace with the holdout's files: hidden from the forks while their agents run, copied in for the holdout command alone, which finds it in $TINE_HOLDOUT")
	f.StringVar(&fl.regression, "regression-test", "", "wider test suite run by sh -c in each fork after the agents ended; evidence for the judge")
	f.StringArrayVar(&fl.checks, "check", nil, "declared check (build, lint, type-check) run by sh -c in each fork after the agents ended, repeatable; evidence for the judge (default [fork] check_commands)")
	f.DurationVar(&fl.testTimeout, "test-timeout", 0, "kill the test command's process tree after this long (default 10m)")
	f.DurationVar(&fl.agentTO, "agent-timeout", 0, "kill an agent after this long (default 30m)")
	f.Float64Var(&fl.budget, "budget", 0, "per-fork budget in USD (default [fork] default_budget_usd, else 5; 0 = none)")
	f.Float64Var(&fl.aggregate, "aggregate-budget", 0, "budget of all forks together in USD (0 = none)")
	f.StringVar(&fl.mode, "merge-mode", "", "auto, auto_with_fallback (default), vote or manual")
	f.StringVar(&fl.judgeKind, "judge", "", "heuristic (default), llm or pairwise (both ask the model of [judge.llm] in tine.toml)")
	f.Float64Var(&fl.threshold, "confidence", 0, "confidence a winner needs to be merged automatically (default 0.8)")
	f.IntVar(&fl.parallel, "parallel", 0, "agents running at once (default all)")
	f.StringVar(&fl.configFile, "config", "", "read this file instead of the workspace's tine.toml")
	f.StringVar(&fl.live, "live", "", "what RUN's processes become in each fork (see tine fork --help)")
	f.StringVar(&fl.session, "session", "", "agent session every fork continues, each in a session of its own (default: the one RUN's hook last reported, else the newest session started in the workspace or below it in the agent's store: Claude Code's projects, Codex's sessions)")
	f.BoolVar(&fl.stopEarly, "stop-when-confident", false, "once a finished fork's tests and holdout (or regression) pass with confidence over the threshold, stop the forks still running (their changes kept); needs --holdout-test or --regression-test")
	f.BoolVar(&fl.synthesize, "synthesize", false, "one more fork, once the others ended, whose agent gets the task with their diffs and test results and combines their best parts; judged with the rest")
	f.BoolVar(&fl.fresh, "fresh", false, "start the agents without a conversation (default [agent.NAME] fresh)")
	f.BoolVar(&fl.asJSON, "json", false, "print the final report as JSON")
	return c
}

// forkRunOptions merges tine.toml and the flags into fork-run's options,
// checking everything that can be checked before anything is forked.
func (a *app) forkRunOptions(ctx context.Context, c *cobra.Command, e *engine.Engine, ref string, fl forkRunFlags) (forkrun.Options, error) {
	src, err := e.FindRun(ctx, ref)
	if err != nil {
		return forkrun.Options{}, err
	}
	cfg, err := forkrun.LoadConfig(e, src, fl.configFile)
	if err != nil {
		return forkrun.Options{}, err
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(a.stderr, "tine: warning: %s\n", display.Text(w.String()))
	}
	req, err := forkRunRequest(c, fl)
	if err != nil {
		return forkrun.Options{}, err
	}
	o, err := forkrun.Configure(cfg, src, req, os.Getenv)
	if err != nil {
		return o, err
	}
	if !fl.asJSON {
		o.Progress = newProgress(a.stdout).update
	}
	return o, nil
}

// forkRunRequest is the fork-run the flags ask for; flags not given are
// left unset, for tine.toml to fill.
func forkRunRequest(c *cobra.Command, fl forkRunFlags) (forkrun.Request, error) {
	prompt, err := readPrompt(fl.prompt, fl.promptFile)
	if err != nil {
		return forkrun.Request{}, err
	}
	set := c.Flags().Changed
	r := forkrun.Request{Prompt: prompt, Approaches: fl.approaches, AgentCmd: fl.agentCmd,
		Session: fl.session, Fresh: fl.fresh, Live: fl.live, MergeMode: fl.mode, Judge: fl.judgeKind,
		StopWhenConfident: fl.stopEarly, Synthesize: fl.synthesize}
	if set("agent") {
		r.Agent = fl.agentName
	}
	if set("copies") {
		r.N = &fl.n
	}
	if set("test") {
		r.Test = &fl.test
	}
	if set("holdout-test") {
		r.Holdout = &fl.holdout
	}
	if set("holdout-dir") {
		abs, err := filepath.Abs(fl.holdoutDir)
		if err != nil {
			return r, fmt.Errorf("--holdout-dir %s: %v: %w", fl.holdoutDir, err, tine.ErrInvalid)
		}
		r.HoldoutDir = &abs
	}
	if set("regression-test") {
		r.Regression = &fl.regression
	}
	if set("check") {
		r.Checks = fl.checks
	}
	if set("test-timeout") {
		r.TestTimeoutS = ptr(fl.testTimeout.Seconds())
	}
	if set("agent-timeout") {
		r.AgentTimeoutS = ptr(fl.agentTO.Seconds())
	}
	if set("budget") {
		r.BudgetUSD = &fl.budget
	}
	if set("aggregate-budget") {
		r.AggregateUSD = &fl.aggregate
	}
	if set("confidence") {
		r.Confidence = &fl.threshold
	}
	if set("parallel") {
		r.Parallel = &fl.parallel
	}
	return r, nil
}

func ptr[T any](v T) *T { return &v }

// readPrompt returns the prompt from --prompt or --prompt-file.
func readPrompt(text, file string) (string, error) {
	switch {
	case text != "" && file != "":
		return "", fmt.Errorf("give --prompt or --prompt-file, not both: %w", tine.ErrInvalid)
	case file == "-":
		b, err := io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
		return string(b), err
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("--prompt-file: %w: %w", err, tine.ErrInvalid)
		}
		return string(b), nil
	}
	return text, nil
}

// forkRun runs the fork-run and prints its report.
func (a *app) forkRun(ctx context.Context, e *engine.Engine, o forkrun.Options, asJSON bool) error {
	progress := o.Progress
	rep, err := forkrun.Run(ctx, forkrun.NewHost(e), o)
	if rep == nil {
		return err
	}
	if progress != nil {
		progress(rep) // the last frame
	}
	if asJSON {
		if perr := a.printJSON(rep); perr != nil {
			return perr
		}
	} else {
		a.printForkRun(rep)
	}
	switch {
	case errors.Is(err, context.Canceled):
		return exitErr{code: exitInterrupted, err: err}
	case err != nil && asJSON:
		return exitErr{code: exitCode(err)}
	case err != nil:
		return err
	case rep.Outcome == forkrun.OutcomeConflict:
		return exitErr{code: exitConflict}
	}
	return nil
}
