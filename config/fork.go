package config

import "time"

// Fork is the [fork] table: how `tine fork-run` runs agents in forks of a
// run and picks the result. Parse applies the defaults, so every field holds
// the value to use; Set says which of them tine.toml gave, for command-line
// flags to override the file and the file to override tine's own choices.
// An invalid value is a Warning and leaves the default in place (and unset).
type Fork struct {
	Enabled             bool     `toml:"enabled"`              // false: fork-run refuses; default true
	MaxBranches         int      `toml:"max_branches"`         // 1..64; default 8
	DefaultBudgetUSD    float64  `toml:"default_budget_usd"`   // per fork; 0 = no cap; default 5
	AggregateBudgetUSD  float64  `toml:"aggregate_budget_usd"` // all forks; 0 (default) = no cap
	MergeMode           string   `toml:"merge_mode"`           // a Merge constant; default MergeAutoWithFallback
	TestCommand         string   `toml:"test_command"`         // run by sh -c in each fork; "" (default) = none
	HoldoutCommand      string   `toml:"holdout_command"`      // run in each fork after the agents, never shown to them; "" = none
	HoldoutDir          string   `toml:"holdout_dir"`          // absolute, outside the workspace: the holdout's files, hidden from the forks; "" = none
	RegressionCommand   string   `toml:"regression_command"`   // the wider suite, run in each fork as evidence; "" = none
	CheckCommands       []string `toml:"check_commands"`       // build, lint, type-check commands run in each fork as evidence
	TestTimeout         Duration `toml:"test_timeout"`         // default 10m
	AgentTimeout        Duration `toml:"agent_timeout"`        // wall clock per agent; default 30m
	Parallel            int      `toml:"parallel"`             // agents at once; 0 (default) = all forks at once
	Agent               string   `toml:"agent"`                // an agent name (see Config.Agent); default "claude"
	Judge               string   `toml:"judge"`                // JudgeHeuristic (default), JudgeLLM or JudgePairwise
	ConfidenceThreshold float64  `toml:"confidence_threshold"` // in [0,1]; default 0.8
	Set                 ForkSet  `toml:"-"`
}

// ForkSet records which [fork] keys tine.toml set to a valid value. A
// field is false for a key the file leaves out or gives an invalid value.
type ForkSet struct {
	Enabled             bool
	MaxBranches         bool
	DefaultBudgetUSD    bool
	AggregateBudgetUSD  bool
	MergeMode           bool
	TestCommand         bool
	HoldoutCommand      bool
	HoldoutDir          bool
	RegressionCommand   bool
	CheckCommands       bool
	TestTimeout         bool
	AgentTimeout        bool
	Parallel            bool
	Agent               bool
	Judge               bool
	ConfidenceThreshold bool
}

// Defaults and bounds of [fork].
const (
	DefaultMaxBranches         = 8
	MaxForkBranches            = 64 // the most fork.max_branches allows
	DefaultBudgetUSD           = 5.0
	DefaultTestTimeout         = 10 * time.Minute
	DefaultAgentTimeout        = 30 * time.Minute
	DefaultAgent               = AgentClaude
	DefaultConfidenceThreshold = 0.8
)

// Merge modes (fork.merge_mode): how fork-run applies the winning fork.
const (
	MergeAuto             = "auto"
	MergeAutoWithFallback = "auto_with_fallback" // the default
	MergeVote             = "vote"
	MergeManual           = "manual"
)

// Judges (fork.judge): how fork-run ranks the forks.
const (
	JudgeHeuristic = "heuristic" // the default
	JudgeLLM       = "llm"       // ask the model of [judge.llm]
	// JudgePairwise asks the model of [judge.llm] about every pair of
	// forks in both orders, after the hard evidence has ranked them.
	JudgePairwise = "pairwise"
)

// JudgeUsesModel reports whether judge kind asks the model of
// [judge.llm], and so spends its API key.
func JudgeUsesModel(kind string) bool { return kind == JudgeLLM || kind == JudgePairwise }

// DefaultFork is the [fork] table of a file that has none.
func DefaultFork() Fork {
	return Fork{
		Enabled:             true,
		MaxBranches:         DefaultMaxBranches,
		DefaultBudgetUSD:    DefaultBudgetUSD,
		MergeMode:           MergeAutoWithFallback,
		TestTimeout:         Duration{DefaultTestTimeout},
		AgentTimeout:        Duration{DefaultAgentTimeout},
		Agent:               DefaultAgent,
		Judge:               JudgeHeuristic,
		ConfidenceThreshold: DefaultConfidenceThreshold,
	}
}

// Agent is an [agent.NAME] table: a coding agent fork-run can start in a
// fork. Its Kind says how tine drives it.
type Agent struct {
	Name   string            `toml:"-"`      // NAME, a tine name
	Kind   string            `toml:"kind"`   // AgentClaude, AgentCodex or AgentCommand
	Binary string            `toml:"binary"` // "" = the kind's binary on PATH; required for AgentCommand
	Args   []string          `toml:"args"`   // extra arguments
	Model  string            `toml:"model"`  // "" = the agent's own default
	Env    map[string]string `toml:"env"`    // added to the agent's environment
	// PermissionMode is Claude Code's --permission-mode (default,
	// acceptEdits, bypassPermissions, dontAsk, plan, auto); "" = tine's
	// default, which lets the agent edit and run commands in its fork
	// (see agent.ClaudePermissions). Claude only.
	PermissionMode string `toml:"permission_mode"`
	// Fresh starts fork-run's agents without a conversation, instead of
	// continuing the workspace's newest session (claude) or the one the
	// run's hook reported (codex); fork-run --session overrides it.
	Fresh bool `toml:"fresh"`
}

// Agent kinds. An [agent.NAME] without kind takes NAME as its kind when
// NAME is one of these.
const (
	AgentClaude  = "claude"  // Claude Code
	AgentCodex   = "codex"   // OpenAI Codex CLI
	AgentCommand = "command" // any program: Binary with Args
)

// Agent returns the agent called name: its [agent.NAME] table, or for
// "claude" and "codex" without one, that agent with no settings.
func (c *Config) Agent(name string) (Agent, bool) {
	if a, ok := c.Agents[name]; ok {
		return a, true
	}
	if name == AgentClaude || name == AgentCodex {
		return Agent{Name: name, Kind: name}, true
	}
	return Agent{}, false
}

// JudgeConfig is the [judge] table.
type JudgeConfig struct {
	LLM LLMJudge `toml:"llm"`
}

// LLMJudge is the [judge.llm] table: the model fork.judge = "llm" or "pairwise" asks.
// Parse applies the defaults, some of which depend on the provider.
type LLMJudge struct {
	Provider     string   `toml:"provider"`       // ProviderOpenAI (default) or ProviderAnthropic
	BaseURL      string   `toml:"base_url"`       // default by provider, ending in /v1
	Model        string   `toml:"model"`          // no default: fork.judge = "llm" needs it
	APIKeyEnv    string   `toml:"api_key_env"`    // environment variable holding the key; default by provider
	Timeout      Duration `toml:"timeout"`        // per request; default 120s
	MaxDiffBytes int      `toml:"max_diff_bytes"` // of each fork's diff shown to the model; default 16384
}

// Judge providers and their defaults.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"

	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com/v1"
	DefaultOpenAIKeyEnv     = "OPENAI_API_KEY"
	DefaultAnthropicKeyEnv  = "ANTHROPIC_API_KEY"

	DefaultJudgeTimeout = 120 * time.Second
	DefaultMaxDiffBytes = 16384
	MaxJudgeDiffBytes   = 16 << 20 // the most judge.llm.max_diff_bytes allows
)

// DefaultLLMJudge is the [judge.llm] table of a file that has none, or the
// defaults of a table naming provider.
func DefaultLLMJudge(provider string) LLMJudge {
	j := LLMJudge{
		Provider:     ProviderOpenAI,
		BaseURL:      DefaultOpenAIBaseURL,
		APIKeyEnv:    DefaultOpenAIKeyEnv,
		Timeout:      Duration{DefaultJudgeTimeout},
		MaxDiffBytes: DefaultMaxDiffBytes,
	}
	if provider == ProviderAnthropic {
		j.Provider, j.BaseURL, j.APIKeyEnv = ProviderAnthropic, DefaultAnthropicBaseURL, DefaultAnthropicKeyEnv
	}
	return j
}

// Account is an [[account]] entry: a named set of environment variables
// (API keys, mostly) an agent can be started with.
type Account struct {
	Name string            `toml:"name"` // a tine name, unique
	Env  map[string]string `toml:"env"`  // never empty
}

// Account returns the account called name.
func (c *Config) Account(name string) (*Account, bool) {
	for i := range c.Accounts {
		if c.Accounts[i].Name == name {
			return &c.Accounts[i], true
		}
	}
	return nil, false
}
