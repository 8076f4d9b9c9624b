package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/budget"
	"github.com/tinehq/tine/config"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/judge"
)

// forkRunFlags are fork-run's command line; unset flags leave tine.toml's
// values.
type forkRunFlags struct {
	prompt, promptFile        string
	n                         int
	approaches                []string
	agentName, agentCmd       string
	test                      string
	testTimeout, agentTO      time.Duration
	budget, aggregate         float64
	mode, judgeKind           string
	threshold                 float64
	parallel                  int
	configFile, live, session string
	asJSON                    bool
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
the judge failed, 2 for bad flags, 7 when the agent's binary is missing.`,
		Example: `  tine fork-run app --prompt "fix the failing test" -n 3 \
      --approach "minimal patch" --approach "rewrite the parser" --test "go test ./..."
  tine fork-run app --prompt-file task.md --agent codex --budget 2 --aggregate-budget 5
  tine fork-run app --prompt "make it faster" --agent-cmd ./try.sh -n 4 --merge-mode manual --json`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(c.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
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
	f.IntVarP(&fl.n, "n", "n", 0, "number of forks (default: the number of approaches, else 3)")
	f.StringArrayVar(&fl.approaches, "approach", nil, "approach of the next fork (repeatable)")
	f.StringVar(&fl.agentName, "agent", "", "agent: claude, codex, command or an [agent.NAME] of tine.toml (default [fork] agent, else claude)")
	f.StringVar(&fl.agentCmd, "agent-cmd", "", "run this shell command as the agent (a command agent; see tine fork-run --help)")
	f.StringVar(&fl.test, "test", "", "test command run by sh -c in each fork once its agent finished")
	f.DurationVar(&fl.testTimeout, "test-timeout", 0, "kill the test command's process tree after this long (default 10m)")
	f.DurationVar(&fl.agentTO, "agent-timeout", 0, "kill an agent after this long (default 30m)")
	f.Float64Var(&fl.budget, "budget", 0, "per-fork budget in USD (default [fork] default_budget_usd, else 5; 0 = none)")
	f.Float64Var(&fl.aggregate, "aggregate-budget", 0, "budget of all forks together in USD (0 = none)")
	f.StringVar(&fl.mode, "merge-mode", "", "auto, auto_with_fallback (default), vote or manual")
	f.StringVar(&fl.judgeKind, "judge", "", "heuristic (default) or llm ([judge.llm] in tine.toml)")
	f.Float64Var(&fl.threshold, "confidence", 0, "confidence a winner needs to be merged automatically (default 0.6)")
	f.IntVar(&fl.parallel, "parallel", 0, "agents running at once (default all)")
	f.StringVar(&fl.configFile, "config", "", "read this file instead of the workspace's tine.toml")
	f.StringVar(&fl.live, "live", "", "what RUN's processes become in each fork (see tine fork --help)")
	f.StringVar(&fl.session, "session", "", "agent conversation the forks continue (default: the one RUN's hook last reported)")
	f.BoolVar(&fl.asJSON, "json", false, "print the final report as JSON")
	return c
}

// forkRunOptions merges tine.toml and the flags into fork-run's options,
// checking everything that can be checked before anything is forked.
func (a *app) forkRunOptions(ctx context.Context, c *cobra.Command, e *engine.Engine, ref string, fl forkRunFlags) (forkrun.Options, error) {
	var o forkrun.Options
	src, err := e.FindRun(ctx, ref)
	if err != nil {
		return o, err
	}
	cfg, err := loadForkConfig(e, src, fl.configFile)
	if err != nil {
		return o, err
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(a.stderr, "tine: warning: %s\n", w)
	}
	fc := cfg.Fork
	if !fc.Enabled {
		return o, fmt.Errorf("%w: %w", forkrun.ErrDisabled, tine.ErrUnsupported)
	}
	if o.Prompt, err = readPrompt(fl.prompt, fl.promptFile); err != nil {
		return o, err
	}
	set := c.Flags().Changed
	o.Source, o.Approaches, o.Live, o.Session = src.Run.ID, fl.approaches, fl.live, fl.session
	o.N = fl.n
	if !set("n") {
		o.N = max(len(fl.approaches), 3)
	}
	if o.N > fc.MaxBranches {
		return o, usageErr(c, fmt.Sprintf("-n %d is over [fork] max_branches = %d", o.N, fc.MaxBranches))
	}
	o.Test = pick(set("test"), fl.test, fc.TestCommand)
	o.TestTimeout = pick(set("test-timeout"), fl.testTimeout, fc.TestTimeout.Duration)
	o.AgentTimeout = pick(set("agent-timeout"), fl.agentTO, fc.AgentTimeout.Duration)
	o.Budget = pick(set("budget"), fl.budget, fc.DefaultBudgetUSD)
	o.Aggregate = pick(set("aggregate-budget"), fl.aggregate, fc.AggregateBudgetUSD)
	o.Threshold = pick(set("confidence"), fl.threshold, fc.ConfidenceThreshold)
	o.Parallel = pick(set("parallel"), fl.parallel, fc.Parallel)
	if o.Mode, err = forkrun.ParseMergeMode(pick(set("merge-mode"), fl.mode, fc.MergeMode)); err != nil {
		return o, err
	}
	if err := a.forkRunAgent(&o, cfg, src, fl, set("agent")); err != nil {
		return o, err
	}
	kind := pick(set("judge"), fl.judgeKind, fc.Judge)
	if o.Judge, err = newJudge(kind, cfg.Judge.LLM); err != nil {
		return o, err
	}
	o.JudgeKind = kind
	for _, acc := range cfg.Accounts {
		o.Accounts = append(o.Accounts, budget.Account{Name: acc.Name, Env: acc.Env})
	}
	if !fl.asJSON {
		o.Progress = newProgress(a.stdout).update
	}
	return o, nil
}

// pick is the flag's value when it was given, else the config's.
func pick[T any](flagSet bool, flag, cfg T) T {
	if flagSet {
		return flag
	}
	return cfg
}

// loadForkConfig reads --config, or the tine.toml of the source run's files.
func loadForkConfig(e *engine.Engine, src engine.Ref, file string) (*config.Config, error) {
	if file != "" {
		return config.LoadFile(file)
	}
	return config.Load(e.Path(src.Workspace, src.Run))
}

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
	if strings.TrimSpace(text) == "" {
		return "", fmt.Errorf("fork-run needs a task: --prompt TEXT or --prompt-file F: %w", tine.ErrInvalid)
	}
	return text, nil
}

// forkRunAgent sets the agent: --agent-cmd, else --agent or [fork] agent,
// looked up among [agent.NAME]; its binary must exist before anything forks.
func (a *app) forkRunAgent(o *forkrun.Options, cfg *config.Config, src engine.Ref, fl forkRunFlags, agentSet bool) error {
	if fl.agentCmd != "" {
		if agentSet && fl.agentName != string(agent.CommandKind) {
			return fmt.Errorf("--agent-cmd runs a command agent; it does not go with --agent %s: %w", fl.agentName, tine.ErrInvalid)
		}
		o.Agent = agent.Config{Kind: agent.CommandKind, Args: []string{"sh", "-c", fl.agentCmd}}
		return checkCommandAgent(fl.agentCmd, src.Workspace.Path)
	}
	name := pick(agentSet, fl.agentName, cfg.Fork.Agent)
	ac, ok := cfg.Agent(name)
	if !ok {
		if name == string(agent.CommandKind) {
			return fmt.Errorf("the command agent needs --agent-cmd or an [agent.command] with a binary in tine.toml: %w", tine.ErrInvalid)
		}
		return fmt.Errorf("no agent %q: use claude, codex, command or an [agent.NAME] of tine.toml: %w", name, tine.ErrInvalid)
	}
	kind, err := agent.ParseKind(ac.Kind)
	if err != nil {
		return fmt.Errorf("%w: %w", err, tine.ErrInvalid)
	}
	bin := ac.Binary
	if strings.Contains(bin, "/") && !filepath.IsAbs(bin) {
		bin = filepath.Join(src.Workspace.Path, bin) // agents start at the workspace path
	}
	o.Agent = agent.Config{Kind: kind, Binary: bin, Args: ac.Args, Model: ac.Model}
	keys := make([]string, 0, len(ac.Env))
	for k := range ac.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		o.AgentEnv = append(o.AgentEnv, k+"="+ac.Env[k])
	}
	return nil
}

// checkCommandAgent makes sure the program of a command agent exists: on
// PATH, or as a path relative to the workspace, where the agent starts.
// A command line the shell must interpret (pipes, variables) is left to
// the shell.
func checkCommandAgent(cmd, dir string) error {
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return fmt.Errorf("--agent-cmd is empty: %w", tine.ErrInvalid)
	}
	prog := f[0]
	if strings.ContainsAny(prog, "$`|&;<>(){}*?=") {
		return nil
	}
	if strings.Contains(prog, "/") {
		if !filepath.IsAbs(prog) {
			prog = filepath.Join(dir, prog)
		}
		if st, err := os.Stat(prog); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return fmt.Errorf("agent program %s is not an executable file: %w", f[0], tine.ErrUnsupported)
		}
		return nil
	}
	if _, err := exec.LookPath(prog); err != nil && !shellBuiltin(prog) {
		return fmt.Errorf("agent program %q not found on PATH: %w", prog, tine.ErrUnsupported)
	}
	return nil
}

func shellBuiltin(s string) bool {
	switch s {
	case "exec", "cd", "echo", "printf", "true", "false", ":", "test", "[", "set", "export", "eval", ".":
		return true
	}
	return false
}

// newJudge builds the judge kind names.
func newJudge(kind string, lc config.LLMJudge) (judge.Judge, error) {
	switch kind {
	case "", config.JudgeHeuristic:
		return judge.Heuristic{}, nil
	case config.JudgeLLM:
		if lc.Model == "" {
			return nil, fmt.Errorf("the llm judge needs [judge.llm] model in tine.toml: %w", tine.ErrInvalid)
		}
		key := os.Getenv(lc.APIKeyEnv)
		if key == "" {
			return nil, fmt.Errorf("the llm judge needs an API key in $%s ([judge.llm] api_key_env): %w", lc.APIKeyEnv, tine.ErrInvalid)
		}
		return judge.LLM{Provider: lc.Provider, BaseURL: lc.BaseURL, Model: lc.Model, APIKey: key,
			MaxDiffBytes: lc.MaxDiffBytes, Timeout: lc.Timeout.Duration}, nil
	}
	return nil, fmt.Errorf("judge %q: use heuristic or llm: %w", kind, tine.ErrInvalid)
}

// forkRun runs the fork-run and prints its report.
func (a *app) forkRun(ctx context.Context, e *engine.Engine, o forkrun.Options, asJSON bool) error {
	progress := o.Progress
	rep, err := forkrun.Run(ctx, e, o)
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
	case err != nil && asJSON:
		return exitErr{code: exitCode(err)}
	case err != nil:
		return err
	case rep.Outcome == forkrun.OutcomeConflict:
		return exitErr{code: exitConflict}
	}
	return nil
}
