package forkrun

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/budget"
	"github.com/tinehq/tine/config"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/judge"
	"mvdan.cc/sh/v3/syntax"
)

// Request is a fork-run as asked for on the command line or through the
// API: what is not set comes from the workspace's tine.toml, then from
// tine's defaults. Pointers tell "not set" from zero.
type Request struct {
	Prompt     string   `json:"prompt"`
	N          *int     `json:"n,omitempty"` // default: the number of approaches, else 3
	Approaches []string `json:"approaches,omitempty"`
	// Agent is claude, codex, command or an [agent.NAME]; AgentCmd, a shell
	// command run as a command agent, excludes it.
	Agent    string  `json:"agent,omitempty"`
	AgentCmd string  `json:"agent_cmd,omitempty"`
	Test     *string `json:"test,omitempty"`
	// Holdout and Regression are the holdout and regression commands
	// (see Options); unset: [fork] holdout_command, regression_command.
	Holdout    *string `json:"holdout,omitempty"`
	Regression *string `json:"regression,omitempty"`
	// HoldoutDir is the holdout's directory (see Options); unset: [fork]
	// holdout_dir. Absolute.
	HoldoutDir *string `json:"holdout_dir,omitempty"`
	// Checks are the declared checks; nil: [fork] check_commands.
	Checks []string `json:"checks,omitempty"`
	// Durations in seconds.
	TestTimeoutS  *float64 `json:"test_timeout_s,omitempty"`
	AgentTimeoutS *float64 `json:"agent_timeout_s,omitempty"`
	BudgetUSD     *float64 `json:"budget_usd,omitempty"`
	AggregateUSD  *float64 `json:"aggregate_budget_usd,omitempty"`
	MergeMode     string   `json:"merge_mode,omitempty"`
	Judge         string   `json:"judge,omitempty"`
	Confidence    *float64 `json:"confidence,omitempty"`
	Parallel      *int     `json:"parallel,omitempty"`
	Session       string   `json:"session,omitempty"`
	Fresh         bool     `json:"fresh,omitempty"` // start the agents without a conversation ([agent.NAME] fresh)
	Live          string   `json:"live,omitempty"`
	// StopWhenConfident and Synthesize: see Options.
	StopWhenConfident bool `json:"stop_when_confident,omitempty"`
	Synthesize        bool `json:"synthesize,omitempty"`
	// Env is the environment of the person asking (tine fork-run through
	// the daemon sends its own): what the agents, tests and checks start
	// from, as they would in the person's tine (their API keys, PATH,
	// CODEX_HOME), the fork's secrets withheld as ever. Ignored from inside
	// a run; empty: the daemon's.
	Env []string `json:"env,omitempty"`
}

// DefaultN is the number of forks when neither -n nor approaches say.
const DefaultN = 3

// Configure turns req for run src into Options, with cfg (the run's
// tine.toml) filling what req leaves out, and checks everything that can be
// checked before anything is forked: the prompt, the numbers, the agent's
// binary, the judge's model and key (read with getenv). Errors wrap
// tine.ErrInvalid (a bad value) or tine.ErrUnsupported (a missing binary,
// fork-run disabled).
func Configure(cfg *config.Config, src engine.Ref, req Request, getenv func(string) string) (Options, error) {
	var o Options
	fc := cfg.Fork
	if !fc.Enabled {
		return o, fmt.Errorf("%w: %w", ErrDisabled, tine.ErrUnsupported)
	}
	if strings.TrimSpace(req.Prompt) == "" {
		return o, tine.Optionf("fork-run needs a task: %s: %w", tine.Opt("prompt"), tine.ErrInvalid)
	}
	o.Source, o.Prompt, o.Approaches, o.Live, o.Session, o.Fresh = src.Run.ID, req.Prompt, req.Approaches, req.Live, req.Session, req.Fresh
	o.N = or(req.N, DefaultN)
	if req.N == nil && len(req.Approaches) > 0 {
		o.N = len(req.Approaches) // one fork per approach
	}
	if o.N < 1 || o.N > fc.MaxBranches {
		return o, fmt.Errorf("-n %d: use 1 to %d forks ([fork] max_branches = %d): %w", o.N, fc.MaxBranches, fc.MaxBranches, tine.ErrInvalid)
	}
	o.StopWhenConfident, o.Synthesize = req.StopWhenConfident, req.Synthesize
	o.Test = or(req.Test, fc.TestCommand)
	o.Holdout = or(req.Holdout, fc.HoldoutCommand)
	o.HoldoutDir = or(req.HoldoutDir, fc.HoldoutDir)
	o.Regression = or(req.Regression, fc.RegressionCommand)
	o.Checks = fc.CheckCommands
	if req.Checks != nil {
		o.Checks = req.Checks
	}
	o.TestTimeout = seconds(req.TestTimeoutS, fc.TestTimeout.Duration)
	o.AgentTimeout = seconds(req.AgentTimeoutS, fc.AgentTimeout.Duration)
	o.Budget = or(req.BudgetUSD, fc.DefaultBudgetUSD)
	o.Aggregate = or(req.AggregateUSD, fc.AggregateBudgetUSD)
	o.Threshold = or(req.Confidence, fc.ConfidenceThreshold)
	o.Parallel = or(req.Parallel, fc.Parallel)
	var err error
	if o.Mode, err = ParseMergeMode(cmpOr(req.MergeMode, fc.MergeMode)); err != nil {
		return o, err
	}
	o.Secrets = cfg.Secrets
	if err := configureAgent(&o, cfg, src, req); err != nil {
		return o, err
	}
	o.JudgeKind = cmpOr(req.Judge, fc.Judge)
	if o.Judge, err = NewJudge(o.JudgeKind, cfg.Judge.LLM, getenv); err != nil {
		return o, err
	}
	for _, acc := range cfg.Accounts {
		o.Accounts = append(o.Accounts, budget.Account{Name: acc.Name, Env: acc.Env})
	}
	for model, p := range cfg.Prices {
		if o.Prices == nil {
			o.Prices = agent.PriceTable{}
		}
		o.Prices[model] = agent.Price{InputPerMTok: p.Input, OutputPerMTok: p.Output,
			CacheReadPerMTok: p.CacheRead, CacheWritePerMTok: p.CacheWrite}
	}
	return o, nil
}

// LoadConfig reads file, or the tine.toml of run src's files.
func LoadConfig(e Versions, src engine.Ref, file string) (*config.Config, error) {
	if file != "" {
		return config.LoadFile(file)
	}
	return config.Load(e.Path(src.Workspace, src.Run))
}

func or[T any](p *T, def T) T {
	if p != nil {
		return *p
	}
	return def
}

func cmpOr(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

func seconds(p *float64, def time.Duration) time.Duration {
	if p == nil {
		return def
	}
	return time.Duration(*p * float64(time.Second))
}

// configureAgent sets the agent: AgentCmd, else Agent or [fork] agent,
// looked up among [agent.NAME]; its program must exist before anything
// forks.
func configureAgent(o *Options, cfg *config.Config, src engine.Ref, req Request) error {
	if req.AgentCmd != "" {
		if req.Agent != "" && req.Agent != string(agent.CommandKind) {
			return tine.Optionf("%s runs a command agent; it does not go with %s %s: %w", tine.Opt("agent_cmd"), tine.Opt("agent"), req.Agent, tine.ErrInvalid)
		}
		o.Agent = agent.Config{Kind: agent.CommandKind, Args: []string{"sh", "-c", req.AgentCmd}}
		o.agentCmd = req.AgentCmd
		_, err := firstProgram(req.AgentCmd) // the program is looked for when the fork-run starts (checkAgent)
		if err != nil {
			return tine.Optionf("%s: %v: %w", tine.Opt("agent_cmd"), err, tine.ErrInvalid)
		}
		return nil
	}
	name := cmpOr(req.Agent, cfg.Fork.Agent)
	ac, ok := cfg.Agent(name)
	if !ok {
		if name == string(agent.CommandKind) {
			return tine.Optionf("the command agent needs %s or an [agent.command] with a binary in tine.toml: %w", tine.Opt("agent_cmd"), tine.ErrInvalid)
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
	args := ac.Args
	if kind == agent.Claude && ac.PermissionMode != "" {
		args = append([]string{"--permission-mode", ac.PermissionMode}, args...)
	}
	o.Agent = agent.Config{Kind: kind, Binary: bin, Args: args, Model: ac.Model}
	o.Fresh = req.Fresh || (ac.Fresh && req.Session == "")
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
// path (the agent's PATH), or as a path relative to the workspace, where
// the agent starts.
// The command line is parsed as sh would; a first command that is a
// compound (if, for, a subshell), a builtin or not a plain word is left to
// the shell. A line that does not parse is refused.
func checkCommandAgent(cmd, dir, path string) error {
	prog, err := firstProgram(cmd)
	if err != nil {
		return tine.Optionf("%s: %v: %w", tine.Opt("agent_cmd"), err, tine.ErrInvalid)
	}
	if prog == "" {
		return nil
	}
	if strings.Contains(prog, "/") {
		path := prog
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		if st, err := os.Stat(path); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return fmt.Errorf("agent program %s is not an executable file: %w", prog, tine.ErrUnsupported)
		}
		return nil
	}
	if _, err := agent.LookPath(prog, path); err != nil {
		return fmt.Errorf("agent program %q not found on PATH %s (the agent's, as the caller gave it): %w", prog, path, tine.ErrUnsupported)
	}
	return nil
}

// firstProgram returns the program the first command of a shell line runs,
// when it is a plain word that names no builtin; "" otherwise.
func firstProgram(cmd string) (string, error) {
	f, err := syntax.NewParser().Parse(strings.NewReader(cmd), "")
	if err != nil {
		return "", err
	}
	if len(f.Stmts) == 0 {
		return "", errors.New("empty command")
	}
	call, ok := f.Stmts[0].Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) == 0 {
		return "", nil // a compound command, or only assignments
	}
	prog := call.Args[0].Lit()
	if specialBuiltin[prog] {
		return "", nil
	}
	return prog, nil // "" when the word is not literal ($X, quotes)
}

// specialBuiltin are the shell builtins that no PATH lookup finds.
var specialBuiltin = map[string]bool{
	"exec": true, "cd": true, ":": true, ".": true, "source": true, "set": true, "export": true, "eval": true,
	"exit": true, "read": true, "trap": true, "umask": true, "ulimit": true, "wait": true, "command": true,
	"builtin": true, "type": true, "unset": true, "shift": true, "return": true, "readonly": true, "times": true,
}

// NewJudge builds the judge kind names ("" is heuristic); the LLM judge's
// key is read with getenv from lc's api_key_env.
func NewJudge(kind string, lc config.LLMJudge, getenv func(string) string) (judge.Judge, error) {
	switch kind {
	case "", config.JudgeHeuristic:
		return judge.Heuristic{}, nil
	case config.JudgeLLM, config.JudgePairwise:
		if lc.Model == "" {
			return nil, fmt.Errorf("the %s judge needs [judge.llm] model in tine.toml: %w", kind, tine.ErrInvalid)
		}
		key := getenv(lc.APIKeyEnv)
		if key == "" {
			return nil, fmt.Errorf("the %s judge needs an API key in $%s ([judge.llm] api_key_env): %w", kind, lc.APIKeyEnv, tine.ErrInvalid)
		}
		l := judge.LLM{Provider: lc.Provider, BaseURL: lc.BaseURL, Model: lc.Model, APIKey: key,
			MaxDiffBytes: lc.MaxDiffBytes, Timeout: lc.Timeout.Duration}
		if kind == config.JudgePairwise {
			return judge.Pairwise{Compare: l}, nil
		}
		return l, nil
	}
	return nil, fmt.Errorf("judge %q: use heuristic, llm or pairwise: %w", kind, tine.ErrInvalid)
}
