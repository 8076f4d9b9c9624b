package forkrun

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/budget"
	"github.com/tinehq/tine/config"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/account"
	"github.com/tinehq/tine/judge"
)

// MergeMode says how a fork-run resolves its group once judged.
type MergeMode string

// The merge modes.
const (
	// Auto merges a winner that clears the confidence threshold into the
	// source and discards the other forks.
	Auto MergeMode = "auto"
	// AutoWithFallback records the winner and waits for tine choose.
	AutoWithFallback MergeMode = "auto_with_fallback"
	// VoteMode asks the judge three times, takes the majority and then
	// resolves as Auto does.
	VoteMode MergeMode = "vote"
	// Manual only reports.
	Manual MergeMode = "manual"
)

// ParseMergeMode turns a flag or config value into a MergeMode.
func ParseMergeMode(s string) (MergeMode, error) {
	switch m := MergeMode(strings.TrimSpace(s)); m {
	case Auto, AutoWithFallback, VoteMode, Manual:
		return m, nil
	case "":
		return AutoWithFallback, nil
	}
	return "", fmt.Errorf("merge mode %q: use auto, auto_with_fallback, vote or manual: %w", s, tine.ErrInvalid)
}

// Defaults of Options.
const (
	DefaultTestTimeout  = 10 * time.Minute
	DefaultAgentTimeout = 30 * time.Minute
	DefaultThreshold    = 0.8
)

// Options is one fork-run.
type Options struct {
	Source     string   // the run to fork
	Prompt     string   // the task
	N          int      // forks, 1 to engine.MaxCopies
	Approaches []string // the i-th fork's approach; the rest get none
	// Agent is the agent every fork runs; AgentEnv is added to its
	// environment. Session, when set, is the conversation every fork
	// continues in a session of its own (claude --resume S
	// --fork-session, codex exec fork S); when empty, Claude's forks
	// continue the newest session of the workspace in Claude Code's store
	// and Codex's the one the run's hook reported. Fresh starts them
	// without one.
	Agent    agent.Config
	AgentEnv []string
	agentCmd string // the shell line of a command agent given as one (checkAgent)
	// BaseEnv, when not nil, is the environment the agents, tests and
	// checks start from: the workspace owner's, as the person who asked
	// had it (a fork-run in the daemon); nil: this process's own.
	BaseEnv []string
	// Secrets is [secrets] of tine.toml: what the forks' processes do not
	// get of BaseEnv. The variables the agent authenticates with
	// (agent.Credentials) are passed to it unless its env names them.
	Secrets config.Secrets
	Session string
	Fresh   bool
	// Prices add to or replace the built-in prices of the agent's models
	// ([prices] of tine.toml); a model priced by neither is charged the
	// most expensive known rate, and a note says so.
	Prices agent.PriceTable
	// Accounts, when given, are spread one per fork; with fewer accounts
	// than N, N is reduced (and a note says so).
	Accounts []budget.Account
	// Test is the test command, run by sh -c in each fork once its agent
	// finished; empty: none.
	Test string
	// Holdout is a command run by sh -c in each finished fork after the
	// agents ended, never shown to them; Regression runs the wider suite.
	// Both are evidence for the judge (see the evidence package); empty:
	// none. They are stopped at TestTimeout.
	Holdout, Regression string
	// HoldoutDir, when set, is a directory outside the workspace holding
	// the holdout's files: hidden from every fork from its first process
	// on (engine.ForkOptions.Hide), copied into a fork's scratch directory
	// only for the holdout command, which finds the copy in $TINE_HOLDOUT,
	// after the fork's agent ended. It needs Holdout.
	HoldoutDir string
	// Checks are declared checks (build, lint, type-check), each run by
	// sh -c in each finished fork as evidence.
	Checks       []string
	TestTimeout  time.Duration
	AgentTimeout time.Duration
	// Budget is the per-fork cap and Aggregate the cap of all forks
	// together, in US dollars; 0 is no cap.
	Budget, Aggregate float64
	// Parallel bounds how many agents run at once; 0 is all.
	Parallel int
	Mode     MergeMode
	// Judge scores the finished forks; JudgeKind names it in the report.
	Judge     judge.Judge
	JudgeKind string
	Threshold float64
	// Synthesize adds one more fork, started once the others ended, whose
	// agent gets the task with their approaches, outcomes and diffs and
	// combines their best parts; it is judged with the rest. N and
	// Approaches do not count it.
	Synthesize bool
	// StopWhenConfident stops the forks still running once a finished
	// fork's confidence clears Threshold against their best possible
	// outcome (see stopIfConfident); it needs Holdout or Regression.
	StopWhenConfident bool
	// Live is the fork's live-state mode (see engine.ForkOptions).
	Live string
	// Progress, when set, is called with a copy of the report whenever a
	// fork's state, cost or tests change. Calls are serialised.
	Progress func(*Report)
}

// ErrDisabled is returned when [fork] enabled = false in tine.toml.
var ErrDisabled = errors.New("fork-run is disabled by tine.toml ([fork] enabled = false)")

// check validates o and fills its defaults.
func (o *Options) check() error {
	if strings.TrimSpace(o.Prompt) == "" {
		return tine.Optionf("fork-run needs a prompt (%s): %w", tine.Opt("prompt"), tine.ErrInvalid)
	}
	if o.N < 1 || o.N > engine.MaxCopies {
		return fmt.Errorf("fork-run: -n %d: use 1 to %d forks: %w", o.N, engine.MaxCopies, tine.ErrInvalid)
	}
	if len(o.Approaches) > o.N {
		return fmt.Errorf("fork-run: %d approaches for %d forks: %w", len(o.Approaches), o.N, tine.ErrInvalid)
	}
	for _, c := range []struct {
		name string
		v    float64
	}{{"budget", o.Budget}, {"aggregate budget", o.Aggregate}, {"confidence threshold", o.Threshold}} {
		if math.IsNaN(c.v) || math.IsInf(c.v, 0) || c.v < 0 {
			return fmt.Errorf("fork-run: %s %v: want a number ≥ 0: %w", c.name, c.v, tine.ErrInvalid)
		}
	}
	if o.StopWhenConfident && o.Holdout == "" && o.Regression == "" {
		return tine.Optionf("fork-run: %s needs a holdout or regression command (%s, %s): the visible tests alone may pass by luck: %w", tine.Opt("stop_when_confident"), tine.Opt("holdout"), tine.Opt("regression"), tine.ErrInvalid)
	}
	if o.HoldoutDir != "" && o.Holdout == "" {
		return tine.Optionf("fork-run: %s needs a holdout command (%s) to run with it: %w", tine.Opt("holdout_dir"), tine.Opt("holdout"), tine.ErrInvalid)
	}
	if o.HoldoutDir != "" && !filepath.IsAbs(o.HoldoutDir) {
		return fmt.Errorf("fork-run: holdout directory %q: want an absolute path: %w", o.HoldoutDir, tine.ErrInvalid)
	}
	if o.Fresh && o.Session != "" {
		return tine.Optionf("fork-run: %s and %s exclude each other: %w", tine.Opt("session"), tine.Opt("fresh"), tine.ErrInvalid)
	}
	if o.Threshold > 1 {
		return fmt.Errorf("fork-run: confidence threshold %v: want 0 to 1: %w", o.Threshold, tine.ErrInvalid)
	}
	if o.TestTimeout < 0 || o.AgentTimeout < 0 || o.Parallel < 0 {
		return tine.Optionf("fork-run: timeouts and %s must not be negative: %w", tine.Opt("parallel"), tine.ErrInvalid)
	}
	if o.TestTimeout == 0 {
		o.TestTimeout = DefaultTestTimeout
	}
	if o.AgentTimeout == 0 {
		o.AgentTimeout = DefaultAgentTimeout
	}
	if o.Parallel == 0 || o.Parallel > o.N {
		o.Parallel = o.N
	}
	if o.Mode == "" {
		o.Mode = AutoWithFallback
	}
	if o.Judge == nil {
		o.Judge, o.JudgeKind = judge.Heuristic{}, "heuristic"
	}
	return nil
}

// checkAgent makes sure the agent's program exists where it will be
// looked for: on the PATH the agent starts with (the caller's, made the
// workspace owner's as the fork's processes get it; not this process's,
// which in the daemon is systemd's), or as a path relative to the
// workspace. It also says whether the agent runs as root: it runs as the
// workspace's owner.
func checkAgent(o *Options, src engine.Ref) error {
	o.Agent.Root = src.Workspace.UID == 0
	path := account.Getenv(agentEnviron(src, o.BaseEnv, o.AgentEnv), "PATH")
	if o.agentCmd != "" {
		return checkCommandAgent(o.agentCmd, src.Workspace.Path, path)
	}
	if err := agent.Check(o.Agent, path); err != nil {
		return fmt.Errorf("%w: %w", err, tine.ErrUnsupported)
	}
	return nil
}
