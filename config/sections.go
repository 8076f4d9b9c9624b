package config

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/tinehq/tine"
)

// checked are the top-level keys the decoder reads key by key: problems
// in them are warnings, and the toml package's unknown keys under them
// are the decoder's to report.
var checked = []string{"fork", "agent", "judge", "account", "prices"}

// sections fills the checked tables of c from raw, the whole document.
func (d *decoder) sections(c *Config, raw map[string]any) {
	if v, ok := raw["fork"]; ok {
		c.Fork = d.fork(v)
	}
	if v, ok := raw["agent"]; ok {
		c.Agents = d.agents(v)
	}
	if v, ok := raw["judge"]; ok {
		c.Judge = d.judge(v)
	}
	if v, ok := raw["account"]; ok {
		c.Accounts = d.accounts(v)
	}
	if v, ok := raw["prices"]; ok {
		c.Prices = d.prices(v)
	}
	if _, ok := c.Agent(c.Fork.Agent); !ok {
		d.warn(d.pos.line("fork", "agent"), "fork.agent: no agent %q: declare [agent.%s] or use %q or %q (using %q)",
			c.Fork.Agent, toml.Key{c.Fork.Agent}, AgentClaude, AgentCodex, DefaultAgent)
		c.Fork.Agent, c.Fork.Set.Agent = DefaultAgent, false
	}
}

func (d *decoder) fork(v any) Fork {
	f := DefaultFork()
	t, ok := d.table(v, "fork", "fork")
	if !ok {
		return f
	}
	s := &f.Set
	s.Enabled = t.bool("enabled", &f.Enabled)
	s.MaxBranches = t.int("max_branches", 1, MaxForkBranches, &f.MaxBranches)
	s.DefaultBudgetUSD = t.budget("default_budget_usd", &f.DefaultBudgetUSD)
	s.AggregateBudgetUSD = t.budget("aggregate_budget_usd", &f.AggregateBudgetUSD)
	s.MergeMode = t.oneOf("merge_mode", &f.MergeMode, MergeAuto, MergeAutoWithFallback, MergeVote, MergeManual)
	s.TestCommand = t.str("test_command", &f.TestCommand)
	s.HoldoutCommand = t.str("holdout_command", &f.HoldoutCommand)
	s.HoldoutDir = t.check("holdout_dir", "an absolute path", filepath.IsAbs, &f.HoldoutDir)
	s.RegressionCommand = t.str("regression_command", &f.RegressionCommand)
	s.CheckCommands = t.stringList("check_commands", &f.CheckCommands)
	s.TestTimeout = t.duration("test_timeout", &f.TestTimeout)
	s.AgentTimeout = t.duration("agent_timeout", &f.AgentTimeout)
	s.Parallel = t.int("parallel", 0, MaxForkBranches, &f.Parallel)
	s.Agent = t.check("agent", "an agent name", tine.ValidName, &f.Agent)
	s.Judge = t.oneOf("judge", &f.Judge, JudgeHeuristic, JudgeLLM, JudgePairwise)
	s.ConfidenceThreshold = t.float("confidence_threshold", 0, 1, "a number from 0 to 1", &f.ConfidenceThreshold)
	t.rest()
	return f
}

func (d *decoder) agents(v any) map[string]Agent {
	t, ok := d.table(v, "agent", "agent")
	if !ok {
		return nil
	}
	agents := map[string]Agent{}
	for _, name := range sortedKeys(t.m) {
		t.used[name] = true
		if a, ok := d.agent(name, t.m[name]); ok {
			agents[name] = a
		}
	}
	return agents
}

var agentKinds = []string{AgentClaude, AgentCodex, AgentCommand}

// agent reads [agent.NAME]. Without a usable kind or name, it warns and
// drops the entry.
func (d *decoder) agent(name string, v any) (Agent, bool) {
	t, ok := d.table(v, toml.Key{"agent", name}.String(), "agent", name)
	if !ok {
		return Agent{}, false
	}
	defer t.rest()
	t.known("kind", "binary", "args", "model", "env", "permission_mode", "fresh")
	line := d.pos.line("agent", name)
	if !tine.ValidName(name) {
		d.warn(line, "%s: name: use 1-64 letters, digits, '.', '_' or '-' (agent ignored)", t.name)
		return Agent{}, false
	}
	a := Agent{Name: name}
	switch k, ok := t.get("kind"); {
	case ok:
		if s, _ := k.(string); !slices.Contains(agentKinds, s) {
			t.bad("kind", k, quoteList(agentKinds), "agent ignored")
			return Agent{}, false
		}
		a.Kind = k.(string)
	case slices.Contains(agentKinds, name):
		a.Kind = name
	default:
		d.warn(line, "%s: no kind: set kind = %s (agent ignored)", t.name, quoteList(agentKinds))
		return Agent{}, false
	}
	t.str("binary", &a.Binary)
	t.stringList("args", &a.Args)
	t.str("model", &a.Model)
	a.Env = t.env("env")
	t.str("permission_mode", &a.PermissionMode)
	if a.PermissionMode != "" && a.Kind != AgentClaude {
		d.warn(line, "%s: permission_mode is for kind %q only (ignored)", t.name, AgentClaude)
		a.PermissionMode = ""
	}
	t.bool("fresh", &a.Fresh)
	if a.Kind == AgentCommand && a.Binary == "" {
		d.warn(line, "%s: kind %q needs a binary (agent ignored)", t.name, AgentCommand)
		return Agent{}, false
	}
	return a, true
}

func (d *decoder) judge(v any) JudgeConfig {
	j := JudgeConfig{LLM: DefaultLLMJudge("")}
	t, ok := d.table(v, "judge", "judge")
	if !ok {
		return j
	}
	if v, ok := t.get("llm"); ok {
		j.LLM = d.llmJudge(t, v)
	}
	t.rest()
	return j
}

func (d *decoder) llmJudge(parent *table, v any) LLMJudge {
	t, ok := parent.sub("llm", v)
	if !ok {
		return DefaultLLMJudge("")
	}
	provider := ProviderOpenAI
	t.oneOf("provider", &provider, ProviderOpenAI, ProviderAnthropic)
	j := DefaultLLMJudge(provider)
	if t.check("base_url", "an http or https URL", validURL, &j.BaseURL) {
		j.BaseURL = strings.TrimRight(j.BaseURL, "/")
	}
	t.str("model", &j.Model)
	t.check("api_key_env", "an environment variable name", validEnvName, &j.APIKeyEnv)
	t.duration("timeout", &j.Timeout)
	t.int("max_diff_bytes", 1, MaxJudgeDiffBytes, &j.MaxDiffBytes)
	t.rest()
	return j
}

// accounts reads [[account]]. It drops, with a warning, an entry with no
// usable name or env and an entry whose name an earlier one has.
func (d *decoder) accounts(v any) []Account {
	var entries []any
	switch v := v.(type) {
	case []map[string]any:
		for _, m := range v {
			entries = append(entries, m)
		}
	case []any:
		entries = v
	default:
		d.warn(d.pos.line("account"), "account: want [[account]] tables, got %s (ignored)", describe(v))
		return nil
	}
	var accounts []Account
	for i, e := range entries {
		if a, ok := d.account(i, e); ok {
			if slices.ContainsFunc(accounts, func(b Account) bool { return b.Name == a.Name }) {
				d.warn(d.pos.line("account", strconv.Itoa(i), "name"), "account %q: declared twice, the first one counts (ignored)", a.Name)
				continue
			}
			accounts = append(accounts, a)
		}
	}
	return accounts
}

func (d *decoder) account(i int, v any) (Account, bool) {
	t, ok := d.table(v, "account", "account", strconv.Itoa(i))
	if !ok {
		return Account{}, false
	}
	defer t.rest()
	t.known("name", "env")
	var a Account
	name, ok := t.get("name")
	if !ok {
		d.warn(d.pos.line(t.path...), "account: no name (account ignored)")
		return Account{}, false
	}
	if s, _ := name.(string); !tine.ValidName(s) {
		t.bad("name", name, "a name of 1-64 letters, digits, '.', '_' or '-'", "account ignored")
		return Account{}, false
	}
	a.Name = name.(string)
	if a.Env = t.env("env"); len(a.Env) == 0 {
		d.warn(d.pos.line(t.path...), "account %q: no env (account ignored)", a.Name)
		return Account{}, false
	}
	return a, true
}
