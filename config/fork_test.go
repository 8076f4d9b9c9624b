package config

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// forkExample is the example of the fork-run issue, with every key set.
const forkExample = `
[fork]
enabled = true
max_branches = 4
default_budget_usd = 2.5
aggregate_budget_usd = 20
merge_mode = "vote"
test_command = "go test ./..."
holdout_command = "sh /srv/holdout.sh"
regression_command = "go test -count=1 ./..."
check_commands = ["go vet ./...", "staticcheck ./..."]
test_timeout = "5m"
agent_timeout = "45m"
parallel = 2
agent = "claude"
judge = "llm"
confidence_threshold = 0.75

[agent.claude]
binary = "/usr/local/bin/claude"
args = ["--permission-mode", "acceptEdits"]
model = "claude-sonnet-4-5"
env = { FOO = "bar" }

[judge.llm]
provider = "openai"
base_url = "https://api.openai.com/v1"
model = "gpt-4.1"
api_key_env = "MY_OPENAI_KEY"
timeout = "60s"
max_diff_bytes = 8192

[[account]]
name = "team-a"
env = { ANTHROPIC_API_KEY = "sk-a" }

[[account]]
name = "team-b"
env = { ANTHROPIC_API_KEY = "sk-b", OTHER = "x" }
`

func TestParse_Fork(t *testing.T) {
	c, err := Parse(forkExample)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 0 {
		t.Errorf("warnings: %q", warnings(c))
	}
	want := Fork{
		Enabled:             true,
		MaxBranches:         4,
		DefaultBudgetUSD:    2.5,
		AggregateBudgetUSD:  20,
		MergeMode:           MergeVote,
		TestCommand:         "go test ./...",
		HoldoutCommand:      "sh /srv/holdout.sh",
		RegressionCommand:   "go test -count=1 ./...",
		CheckCommands:       []string{"go vet ./...", "staticcheck ./..."},
		TestTimeout:         Duration{5 * time.Minute},
		AgentTimeout:        Duration{45 * time.Minute},
		Parallel:            2,
		Agent:               "claude",
		Judge:               JudgeLLM,
		ConfidenceThreshold: 0.75,
		Set: ForkSet{
			Enabled: true, MaxBranches: true, DefaultBudgetUSD: true, AggregateBudgetUSD: true,
			MergeMode: true, TestCommand: true, HoldoutCommand: true, RegressionCommand: true, CheckCommands: true, TestTimeout: true, AgentTimeout: true,
			Parallel: true, Agent: true, Judge: true, ConfidenceThreshold: true,
		},
	}
	if !reflect.DeepEqual(c.Fork, want) {
		t.Errorf("fork:\n got %+v\nwant %+v", c.Fork, want)
	}
	claude := Agent{
		Name:   "claude",
		Kind:   AgentClaude,
		Binary: "/usr/local/bin/claude",
		Args:   []string{"--permission-mode", "acceptEdits"},
		Model:  "claude-sonnet-4-5",
		Env:    map[string]string{"FOO": "bar"},
	}
	if !reflect.DeepEqual(c.Agents, map[string]Agent{"claude": claude}) {
		t.Errorf("agents = %+v", c.Agents)
	}
	llm := LLMJudge{
		Provider:     ProviderOpenAI,
		BaseURL:      "https://api.openai.com/v1",
		Model:        "gpt-4.1",
		APIKeyEnv:    "MY_OPENAI_KEY",
		Timeout:      Duration{time.Minute},
		MaxDiffBytes: 8192,
	}
	if c.Judge.LLM != llm {
		t.Errorf("judge.llm = %+v", c.Judge.LLM)
	}
	accounts := []Account{
		{Name: "team-a", Env: map[string]string{"ANTHROPIC_API_KEY": "sk-a"}},
		{Name: "team-b", Env: map[string]string{"ANTHROPIC_API_KEY": "sk-b", "OTHER": "x"}},
	}
	if !reflect.DeepEqual(c.Accounts, accounts) {
		t.Errorf("accounts = %+v", c.Accounts)
	}
	if a, ok := c.Account("team-b"); !ok || a.Env["OTHER"] != "x" {
		t.Errorf("Account(team-b) = %+v, %v", a, ok)
	}
	if _, ok := c.Account("team-c"); ok {
		t.Error("Account(team-c) found")
	}
}

func TestParse_ForkDefaults(t *testing.T) {
	for _, doc := range []string{"", "[fork]\n", "[judge]\n[judge.llm]\n", "[agent]\n"} {
		c, err := Parse(doc)
		if err != nil || len(c.Warnings) != 0 {
			t.Fatalf("Parse(%q) = %v, %v", doc, warnings(c), err)
		}
		f := c.Fork
		if !f.Enabled || f.MaxBranches != 8 || f.DefaultBudgetUSD != 5 || f.AggregateBudgetUSD != 0 ||
			f.MergeMode != "auto_with_fallback" || f.TestCommand != "" || f.TestTimeout.Duration != 10*time.Minute ||
			f.AgentTimeout.Duration != 30*time.Minute || f.Parallel != 0 || f.Agent != "claude" ||
			f.Judge != "heuristic" || f.ConfidenceThreshold != 0.8 || f.Set != (ForkSet{}) {
			t.Errorf("Parse(%q): fork = %+v", doc, f)
		}
		j := c.Judge.LLM
		if j.Provider != "openai" || j.BaseURL != "https://api.openai.com/v1" || j.Model != "" ||
			j.APIKeyEnv != "OPENAI_API_KEY" || j.Timeout.Duration != 120*time.Second || j.MaxDiffBytes != 16384 {
			t.Errorf("Parse(%q): judge.llm = %+v", doc, j)
		}
		if len(c.Agents) != 0 || len(c.Accounts) != 0 {
			t.Errorf("Parse(%q): agents %v, accounts %v", doc, c.Agents, c.Accounts)
		}
	}
	c, _ := Parse("")
	if !reflect.DeepEqual(c, Default()) {
		t.Errorf("Parse(\"\") = %+v, Default() = %+v", c, Default())
	}
}

// TestParse_ForkSet checks that a key set to its default value is told
// from a key left out.
func TestParse_ForkSet(t *testing.T) {
	c, err := Parse(`
[fork]
default_budget_usd = 5
aggregate_budget_usd = 0.0
merge_mode = "auto_with_fallback"
test_command = ""
agent = "claude"
judge = "heuristic"
`)
	if err != nil || len(c.Warnings) != 0 {
		t.Fatal(warnings(c), err)
	}
	want := DefaultFork()
	want.Set = ForkSet{DefaultBudgetUSD: true, AggregateBudgetUSD: true, MergeMode: true, TestCommand: true, Agent: true, Judge: true}
	if !reflect.DeepEqual(c.Fork, want) {
		t.Errorf("fork:\n got %+v\nwant %+v", c.Fork, want)
	}
}

// TestParse_ForkInvalid checks that each invalid [fork] value is a warning
// on its line and leaves the default, unset.
func TestParse_ForkInvalid(t *testing.T) {
	for _, tt := range []struct{ doc, want string }{
		{`enabled = "yes"`, `fork.enabled: want true or false, got "yes" (using true)`},
		{`max_branches = 0`, `fork.max_branches: want an integer from 1 to 64, got 0 (using 8)`},
		{`max_branches = 65`, `fork.max_branches: want an integer from 1 to 64, got 65 (using 8)`},
		{`max_branches = "eight"`, `fork.max_branches: want an integer from 1 to 64, got "eight" (using 8)`},
		{`max_branches = 8.0`, `fork.max_branches: want an integer from 1 to 64, got 8.0 (using 8)`},
		{`default_budget_usd = -1`, `fork.default_budget_usd: want a number of dollars, 0 or more, got -1 (using 5)`},
		{`default_budget_usd = nan`, `fork.default_budget_usd: want a number of dollars, 0 or more, got nan (using 5)`},
		{`default_budget_usd = inf`, `fork.default_budget_usd: want a number of dollars, 0 or more, got +inf (using 5)`},
		{`default_budget_usd = "5"`, `fork.default_budget_usd: want a number of dollars, 0 or more, got "5" (using 5)`},
		{`aggregate_budget_usd = -0.5`, `fork.aggregate_budget_usd: want a number of dollars, 0 or more, got -0.5 (using 0)`},
		{`merge_mode = "yolo"`, `fork.merge_mode: want "auto", "auto_with_fallback", "vote" or "manual", got "yolo" (using "auto_with_fallback")`},
		{`merge_mode = 1`, `fork.merge_mode: want "auto", "auto_with_fallback", "vote" or "manual", got 1 (using "auto_with_fallback")`},
		{`test_command = ["go", "test"]`, `fork.test_command: want a string, got an array (using none)`},
		{`test_timeout = "soon"`, `fork.test_timeout: want a duration such as "90s" or "10m", got "soon" (using 10m0s)`},
		{`test_timeout = "-1s"`, `fork.test_timeout: want a duration such as "90s" or "10m", got "-1s" (using 10m0s)`},
		{`test_timeout = "0s"`, `fork.test_timeout: want a duration such as "90s" or "10m", got "0s" (using 10m0s)`},
		{`test_timeout = 600`, `fork.test_timeout: want a duration such as "90s" or "10m", got 600 (using 10m0s)`},
		{`test_timeout = 1979-05-27`, `fork.test_timeout: want a duration such as "90s" or "10m", got a date or time (using 10m0s)`},
		{`agent_timeout = "1 hour"`, `fork.agent_timeout: want a duration such as "90s" or "10m", got "1 hour" (using 30m0s)`},
		{`parallel = -1`, `fork.parallel: want an integer from 0 to 64, got -1 (using 0)`},
		{`parallel = 1000`, `fork.parallel: want an integer from 0 to 64, got 1000 (using 0)`},
		{`agent = "a b"`, `fork.agent: want an agent name, got "a b" (using "claude")`},
		{`agent = "ghost"`, `fork.agent: no agent "ghost": declare [agent.ghost] or use "claude" or "codex" (using "claude")`},
		{`judge = "gpt"`, `fork.judge: want "heuristic", "llm" or "pairwise", got "gpt" (using "heuristic")`},
		{`confidence_threshold = 1.5`, `fork.confidence_threshold: want a number from 0 to 1, got 1.5 (using 0.8)`},
		{`confidence_threshold = -0.1`, `fork.confidence_threshold: want a number from 0 to 1, got -0.1 (using 0.8)`},
		{`confidence_threshold = "high"`, `fork.confidence_threshold: want a number from 0 to 1, got "high" (using 0.8)`},
		{`confidence_threshold = { a = 1 }`, `fork.confidence_threshold: want a number from 0 to 1, got a table (using 0.8)`},
	} {
		c, err := Parse("[fork]\n" + tt.doc)
		if err != nil {
			t.Errorf("%s: %v", tt.doc, err)
			continue
		}
		if got, want := warnings(c), []string{"tine.toml:2: " + tt.want}; !slices.Equal(got, want) {
			t.Errorf("%s: warnings\n got %q\nwant %q", tt.doc, got, want)
		}
		if !reflect.DeepEqual(c.Fork, DefaultFork()) {
			t.Errorf("%s: fork = %+v", tt.doc, c.Fork)
		}
	}
}

func TestParse_ForkNotATable(t *testing.T) {
	c, err := Parse("fork = 3\n[network]\nisolate = true")
	if err != nil {
		t.Fatal(err)
	}
	if got := warnings(c); !slices.Equal(got, []string{"tine.toml:1: fork: want a table, got 3 (ignored)"}) {
		t.Errorf("warnings = %q", got)
	}
	if !reflect.DeepEqual(c.Fork, DefaultFork()) || !c.Network.Isolate {
		t.Errorf("config = %+v", c)
	}
}

// TestParse_ForkPartlyInvalid checks that an invalid value costs only
// itself.
func TestParse_ForkPartlyInvalid(t *testing.T) {
	c, err := Parse("[fork]\nmax_branches = 100\nparallel = 3\nmerge_mode = \"manual\"\n")
	if err != nil {
		t.Fatal(err)
	}
	f := c.Fork
	if f.MaxBranches != 8 || f.Set.MaxBranches || f.Parallel != 3 || !f.Set.Parallel || f.MergeMode != MergeManual {
		t.Errorf("fork = %+v", f)
	}
	if len(c.Warnings) != 1 || c.Warnings[0].Line != 2 {
		t.Errorf("warnings = %q", warnings(c))
	}
}

func TestParse_Agents(t *testing.T) {
	c, err := Parse(`
[agent.claude]
model = "claude-opus-4"
fresh = true

[agent.fast]
kind = "codex"
model = "o4-mini"
args = []

[agent.script]
kind = "command"
binary = "./agent.sh"
args = ["--fast"]
env = { MODE = "ci" }

[fork]
agent = "fast"
`)
	if err != nil || len(c.Warnings) != 0 {
		t.Fatal(warnings(c), err)
	}
	want := map[string]Agent{
		"claude": {Name: "claude", Kind: AgentClaude, Model: "claude-opus-4", Fresh: true},
		"fast":   {Name: "fast", Kind: AgentCodex, Model: "o4-mini", Args: []string{}},
		"script": {Name: "script", Kind: AgentCommand, Binary: "./agent.sh", Args: []string{"--fast"}, Env: map[string]string{"MODE": "ci"}},
	}
	if !reflect.DeepEqual(c.Agents, want) {
		t.Errorf("agents:\n got %+v\nwant %+v", c.Agents, want)
	}
	if c.Fork.Agent != "fast" || !c.Fork.Set.Agent {
		t.Errorf("fork.agent = %q", c.Fork.Agent)
	}
	for name, want := range map[string]Agent{
		"claude": want["claude"],
		"script": want["script"],
		"codex":  {Name: "codex", Kind: AgentCodex},
	} {
		if a, ok := c.Agent(name); !ok || !reflect.DeepEqual(a, want) {
			t.Errorf("Agent(%q) = %+v, %v", name, a, ok)
		}
	}
	if a, ok := c.Agent("command"); ok {
		t.Errorf("Agent(command) = %+v", a)
	}
	if a, ok := Default().Agent(DefaultAgent); !ok || a.Kind != AgentClaude {
		t.Errorf("Default().Agent(%q) = %+v, %v", DefaultAgent, a, ok)
	}
}

// TestParse_AgentsInvalid checks that an agent without a usable kind or
// name is dropped, and that other invalid values fall back to none.
func TestParse_AgentsInvalid(t *testing.T) {
	for _, tt := range []struct {
		doc    string
		want   []string
		agents map[string]Agent
	}{
		{"[agent.mine]\nmodel = \"m\"", []string{`tine.toml:1: agent.mine: no kind: set kind = "claude", "codex" or "command" (agent ignored)`}, nil},
		{"[agent.mine]\nkind = \"gpt\"\nmodel = \"m\"\nx = 1", []string{
			`tine.toml:2: agent.mine.kind: want "claude", "codex" or "command", got "gpt" (agent ignored)`,
			`tine.toml:4: unknown key "agent.mine.x" (ignored)`,
		}, nil},
		{"[agent.claude]\nkind = 1", []string{`tine.toml:2: agent.claude.kind: want "claude", "codex" or "command", got 1 (agent ignored)`}, nil},
		{"[agent.mine]\nkind = \"command\"", []string{`tine.toml:1: agent.mine: kind "command" needs a binary (agent ignored)`}, nil},
		{"[agent.\"a b\"]\nkind = \"codex\"", []string{`tine.toml:1: agent."a b": name: use 1-64 letters, digits, '.', '_' or '-' (agent ignored)`}, nil},
		{"agent = 3", []string{`tine.toml:1: agent: want a table, got 3 (ignored)`}, nil},
		{"[agent]\nclaude = \"x\"", []string{`tine.toml:2: agent.claude: want a table, got "x" (ignored)`}, nil},
		{"[agent.claude]\nargs = \"--x\"\nbinary = 3", []string{
			`tine.toml:2: agent.claude.args: want an array of strings, got "--x" (using none)`,
			`tine.toml:3: agent.claude.binary: want a string, got 3 (using none)`,
		}, map[string]Agent{"claude": {Name: "claude", Kind: AgentClaude}}},
		{"[agent.claude]\nargs = [\n  \"a\",\n  1,\n]\nmodel = \"m\"", []string{
			`tine.toml:2: agent.claude.args: want an array of strings, got an array (using none)`,
		}, map[string]Agent{"claude": {Name: "claude", Kind: AgentClaude, Model: "m"}}},
		{"[agent.claude]\nenv = { A = 1, B = \"b\", \"C=D\" = \"x\" }", []string{
			`tine.toml:2: agent.claude.env.A: want a string, got 1 (ignored)`,
			`tine.toml:2: agent.claude.env."C=D": not an environment variable name (ignored)`,
		}, map[string]Agent{"claude": {Name: "claude", Kind: AgentClaude, Env: map[string]string{"B": "b"}}}},
		{"[agent.claude]\nenv = \"x\"", []string{`tine.toml:2: agent.claude.env: want a table, got "x" (ignored)`},
			map[string]Agent{"claude": {Name: "claude", Kind: AgentClaude}}},
		{"[agent.claude.env]\nA = \"a\"\nB = 2", []string{`tine.toml:3: agent.claude.env.B: want a string, got 2 (ignored)`},
			map[string]Agent{"claude": {Name: "claude", Kind: AgentClaude, Env: map[string]string{"A": "a"}}}},
		{"[agent.mine]\nkind = \"gpt\"\n[fork]\nagent = \"mine\"", []string{
			`tine.toml:2: agent.mine.kind: want "claude", "codex" or "command", got "gpt" (agent ignored)`,
			`tine.toml:4: fork.agent: no agent "mine": declare [agent.mine] or use "claude" or "codex" (using "claude")`,
		}, nil},
	} {
		c, err := Parse(tt.doc)
		if err != nil {
			t.Errorf("%q: %v", tt.doc, err)
			continue
		}
		if got := warnings(c); !slices.Equal(got, tt.want) {
			t.Errorf("%q: warnings\n got %q\nwant %q", tt.doc, got, tt.want)
		}
		if !maps.EqualFunc(c.Agents, tt.agents, func(a, b Agent) bool { return reflect.DeepEqual(a, b) }) {
			t.Errorf("%q: agents = %+v", tt.doc, c.Agents)
		}
		if c.Fork.Agent != DefaultAgent || c.Fork.Set.Agent {
			t.Errorf("%q: fork.agent = %q", tt.doc, c.Fork.Agent)
		}
	}
}

func TestParse_Judge(t *testing.T) {
	for _, tt := range []struct {
		doc  string
		want LLMJudge
	}{
		{"[judge.llm]\nprovider = \"anthropic\"\nmodel = \"claude-haiku\"", LLMJudge{
			Provider: "anthropic", BaseURL: "https://api.anthropic.com/v1", Model: "claude-haiku",
			APIKeyEnv: "ANTHROPIC_API_KEY", Timeout: Duration{120 * time.Second}, MaxDiffBytes: 16384,
		}},
		{"[judge.llm]\nbase_url = \"http://localhost:8080/v1/\"\napi_key_env = \"LOCAL_KEY\"\ntimeout = \"5s\"\nmax_diff_bytes = 1", LLMJudge{
			Provider: "openai", BaseURL: "http://localhost:8080/v1",
			APIKeyEnv: "LOCAL_KEY", Timeout: Duration{5 * time.Second}, MaxDiffBytes: 1,
		}},
		{"judge.llm = { provider = \"anthropic\", api_key_env = \"K\" }", LLMJudge{
			Provider: "anthropic", BaseURL: "https://api.anthropic.com/v1",
			APIKeyEnv: "K", Timeout: Duration{120 * time.Second}, MaxDiffBytes: 16384,
		}},
	} {
		c, err := Parse(tt.doc)
		if err != nil || len(c.Warnings) != 0 {
			t.Errorf("%q: %q, %v", tt.doc, warnings(c), err)
			continue
		}
		if c.Judge.LLM != tt.want {
			t.Errorf("%q: judge.llm\n got %+v\nwant %+v", tt.doc, c.Judge.LLM, tt.want)
		}
	}
}

// TestParse_JudgeInvalid checks that each invalid [judge.llm] value is a
// warning on its line and leaves the default.
func TestParse_JudgeInvalid(t *testing.T) {
	for _, tt := range []struct{ doc, want string }{
		{"[judge.llm]\nprovider = \"gemini\"", `tine.toml:2: judge.llm.provider: want "openai" or "anthropic", got "gemini" (using "openai")`},
		{"[judge.llm]\nbase_url = \"ftp://x\"", `tine.toml:2: judge.llm.base_url: want an http or https URL, got "ftp://x" (using "https://api.openai.com/v1")`},
		{"[judge.llm]\nbase_url = \"api.openai.com\"", `tine.toml:2: judge.llm.base_url: want an http or https URL, got "api.openai.com" (using "https://api.openai.com/v1")`},
		{"[judge.llm]\nmodel = 4.1", `tine.toml:2: judge.llm.model: want a string, got 4.1 (using none)`},
		{"[judge.llm]\napi_key_env = \"sk-abc\"", `tine.toml:2: judge.llm.api_key_env: want an environment variable name, got "sk-abc" (using "OPENAI_API_KEY")`},
		{"[judge.llm]\ntimeout = \"2\"", `tine.toml:2: judge.llm.timeout: want a duration such as "90s" or "10m", got "2" (using 2m0s)`},
		{"[judge.llm]\nmax_diff_bytes = 0", `tine.toml:2: judge.llm.max_diff_bytes: want an integer from 1 to 16777216, got 0 (using 16384)`},
		{"judge = 3", `tine.toml:1: judge: want a table, got 3 (ignored)`},
		{"[judge]\nllm = \"x\"", `tine.toml:2: judge.llm: want a table, got "x" (ignored)`},
	} {
		c, err := Parse(tt.doc)
		if err != nil {
			t.Errorf("%q: %v", tt.doc, err)
			continue
		}
		if got := warnings(c); !slices.Equal(got, []string{tt.want}) {
			t.Errorf("%q: warnings\n got %q\nwant %q", tt.doc, got, tt.want)
		}
		if c.Judge.LLM != DefaultLLMJudge("") {
			t.Errorf("%q: judge.llm = %+v", tt.doc, c.Judge.LLM)
		}
	}
	c, _ := Parse("[judge.llm]\nprovider = \"anthropic\"\napi_key_env = \"\"")
	if c.Judge.LLM != DefaultLLMJudge(ProviderAnthropic) || len(c.Warnings) != 1 {
		t.Errorf("anthropic with a bad key env: %+v %q", c.Judge.LLM, warnings(c))
	}
}

func TestParse_Accounts(t *testing.T) {
	a := []Account{{Name: "a", Env: map[string]string{"K": "v"}}}
	for _, tt := range []struct {
		doc      string
		want     []string
		accounts []Account
	}{
		{`account = [{ name = "a", env = { K = "v" } }]`, nil, a},
		{"[[account]]\nname = \"a\"\n[account.env]\nK = \"v\"", nil, a},
		{"[[account]]\nenv = { K = \"v\" }\n[[account]]\nname = \"a\"\nenv = { K = \"v\" }", []string{`tine.toml:1: account: no name (account ignored)`}, a},
		{"[[account]]\nname = \"a b\"\nenv = { K = \"v\" }", []string{`tine.toml:2: account.name: want a name of 1-64 letters, digits, '.', '_' or '-', got "a b" (account ignored)`}, nil},
		{"[[account]]\nname = 7\nenv = { K = \"v\" }", []string{`tine.toml:2: account.name: want a name of 1-64 letters, digits, '.', '_' or '-', got 7 (account ignored)`}, nil},
		{"[[account]]\nname = \"a\"", []string{`tine.toml:1: account "a": no env (account ignored)`}, nil},
		{"[[account]]\nname = \"a\"\nenv = {}", []string{`tine.toml:1: account "a": no env (account ignored)`}, nil},
		{"\n[[account]]\nname = \"a\"\nenv = { K = 1 }", []string{
			`tine.toml:2: account "a": no env (account ignored)`,
			`tine.toml:4: account.env.K: want a string, got 1 (ignored)`,
		}, nil},
		{"[[account]]\nname = \"a\"\nenv = { K = \"v\" }\n[[account]]\nname = \"a\"\nenv = { K = \"w\" }", []string{
			`tine.toml:5: account "a": declared twice, the first one counts (ignored)`,
		}, a},
		{"account = 3", []string{`tine.toml:1: account: want [[account]] tables, got 3 (ignored)`}, nil},
		{`account = [3, { name = "a", env = { K = "v" } }]`, []string{`tine.toml:1: account: want a table, got 3 (ignored)`}, a},
		{"[account]\nname = \"a\"", []string{`tine.toml:1: account: want [[account]] tables, got a table (ignored)`}, nil},
	} {
		c, err := Parse(tt.doc)
		if err != nil {
			t.Errorf("%q: %v", tt.doc, err)
			continue
		}
		if got := warnings(c); !slices.Equal(got, tt.want) {
			t.Errorf("%q: warnings\n got %q\nwant %q", tt.doc, got, tt.want)
		}
		if !reflect.DeepEqual(c.Accounts, tt.accounts) {
			t.Errorf("%q: accounts = %+v", tt.doc, c.Accounts)
		}
	}
}

// TestParse_WarningsHideSecrets checks that no warning shows an env value.
func TestParse_WarningsHideSecrets(t *testing.T) {
	c, err := Parse("[[account]]\nname = \"a\"\nenv = { \"K=1\" = \"sk-secret\", N = \"sk-\\u0000secret\" }\n" +
		"[agent.claude]\nenv = { \"\" = \"sk-secret\" }")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Warnings) != 4 {
		t.Errorf("warnings = %q", warnings(c))
	}
	for _, w := range warnings(c) {
		if strings.Contains(w, "secret") {
			t.Errorf("warning shows a secret: %s", w)
		}
	}
}
