package mcp

import (
	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ForkInput is the input of fork_run and fork.
type ForkInput struct {
	Run        string   `json:"run,omitempty" jsonschema:"the run to fork (id, WORKSPACE/NAME or name); default: the run this server runs in; required on the host"`
	Copies     int      `json:"copies,omitempty" jsonschema:"how many forks, 1 to 16; default: one per approach, at least 1"`
	Approaches []string `json:"approaches,omitempty" jsonschema:"what each fork is for: the i-th fork gets the i-th approach"`
	Name       string   `json:"name,omitempty" jsonschema:"name prefix of the forks; default the parent's name"`
	Live       string   `json:"live,omitempty" jsonschema:"how a running parent's processes reach the forks: none, rerun (default when it runs) or ptrace"`
	Command    string   `json:"command,omitempty" jsonschema:"fork_run without prompt: a shell command (an agent, a test) run to its end in every fork at once, with TINE_APPROACH set to the fork's approach"`
	TimeoutS   float64  `json:"timeout_s,omitempty" jsonschema:"fork_run: seconds the command (with prompt: the agent) may take in each fork (0: no limit; with prompt: tine.toml's agent_timeout, else 30m)"`
	// A fork-run: with Prompt, the daemon runs an agent in every fork,
	// tests, judges and resolves the group (see forkrun.Request).
	Prompt             string   `json:"prompt,omitempty" jsonschema:"fork_run: the task; starts a fork-run in the daemon: an agent per fork, then tests, a judge, and the merge mode; follow it with fork_report"`
	Agent              string   `json:"agent,omitempty" jsonschema:"fork_run with prompt: claude, codex, command or an [agent.NAME] of tine.toml (default [fork] agent)"`
	AgentCmd           string   `json:"agent_cmd,omitempty" jsonschema:"fork_run with prompt: a shell command run as the agent in each fork (TINE_PROMPT, TINE_APPROACH set)"`
	Test               *string  `json:"test,omitempty" jsonschema:"fork_run with prompt: test command run by sh -c in each fork once its agent finished (default [fork] test_command)"`
	TestTimeoutS       float64  `json:"test_timeout_s,omitempty" jsonschema:"fork_run with prompt: seconds before the tests' process tree is killed (default 600)"`
	BudgetUSD          *float64 `json:"budget_usd,omitempty" jsonschema:"fork_run with prompt: per-fork budget in US dollars; 0: no cap (default [fork] default_budget_usd, else 5)"`
	AggregateBudgetUSD *float64 `json:"aggregate_budget_usd,omitempty" jsonschema:"fork_run with prompt: budget of all forks together in US dollars; 0: no cap"`
	MergeMode          string   `json:"merge_mode,omitempty" jsonschema:"fork_run with prompt: auto, auto_with_fallback (default), vote or manual; from inside a run only auto_with_fallback or manual"`
	Judge              string   `json:"judge,omitempty" jsonschema:"fork_run with prompt: heuristic (default) or llm (host only)"`
	Session            string   `json:"session,omitempty" jsonschema:"fork_run with prompt: the agent session every fork continues, each in a session of its own (default: claude, the newest session started in the workspace or below it; codex, the one the run's hook reported)"`
	Fresh              bool     `json:"fresh,omitempty" jsonschema:"fork_run with prompt: start the agents without a conversation"`
}

// BranchesInput names a group of forks or a run.
type BranchesInput struct {
	Group string `json:"group,omitempty" jsonschema:"a fork group id (fork_run returns it)"`
	Run   string `json:"run,omitempty" jsonschema:"a run (id, WORKSPACE/NAME or name)"`
}

// DiffInput is the input of diff_branches.
type DiffInput struct {
	Run   string `json:"run" jsonschema:"the run whose changes since its fork point to show"`
	Patch bool   `json:"patch,omitempty" jsonschema:"the unified diff of text files instead of the list of changed paths"`
}

// MergeInput is the input of merge_or_select.
type MergeInput struct {
	Run     string `json:"run" jsonschema:"the run to merge, or the group's fork to keep"`
	Into    string `json:"into,omitempty" jsonschema:"merge target; default and, from inside a run, only choice: the run's parent"`
	DryRun  *bool  `json:"dry_run,omitempty" jsonschema:"only show the plan; default true"`
	Group   string `json:"group,omitempty" jsonschema:"resolve this group with run: keep it (merged, or promoted) and discard the group's other forks"`
	Promote bool   `json:"promote,omitempty" jsonschema:"make run the workspace's source instead of merging it"`
}

// DiscardInput is the input of terminate_branch and discard.
type DiscardInput struct {
	Run   string `json:"run" jsonschema:"the run (or group) to discard"`
	Force bool   `json:"force,omitempty" jsonschema:"discard even unmerged work, or while commands run in it"`
}

// RunInput names one run.
type RunInput struct {
	Run string `json:"run" jsonschema:"a run (id, WORKSPACE/NAME or name)"`
}

// GroupInput names one group.
type GroupInput struct {
	Group string `json:"group" jsonschema:"a fork group id"`
}

// RollbackInput is the input of rollback.
type RollbackInput struct {
	Run string `json:"run" jsonschema:"the run to roll back"`
	To  string `json:"to" jsonschema:"the version (id or label) whose files the run gets; its current files are saved as a version first"`
}

// forkSchema bounds copies and the fork-run's numbers, and lists the
// merge modes and judges.
func forkSchema() *jsonschema.Schema {
	return schemaFor[ForkInput](func(p map[string]*jsonschema.Schema) {
		p["copies"].Minimum, p["copies"].Maximum = ptr(1.0), ptr(float64(MaxCopies))
		for _, k := range []string{"timeout_s", "test_timeout_s", "budget_usd", "aggregate_budget_usd"} {
			p[k].Minimum = ptr(0.0)
		}
		p["merge_mode"].Enum = []any{"auto", "auto_with_fallback", "vote", "manual"}
		p["judge"].Enum = []any{"heuristic", "llm", "pairwise"}
	})
}

// forkOnlySchema is forkSchema without the fork-run's fields.
func forkOnlySchema() *jsonschema.Schema {
	s := forkSchema()
	for _, k := range []string{"prompt", "agent", "agent_cmd", "test", "test_timeout_s",
		"budget_usd", "aggregate_budget_usd", "merge_mode", "judge", "session", "fresh"} {
		delete(s.Properties, k)
	}
	return s
}

// mergeSchema says dry_run defaults to true.
func mergeSchema() *jsonschema.Schema {
	return schemaFor[MergeInput](func(p map[string]*jsonschema.Schema) {
		p["dry_run"].Default = []byte("true")
	})
}

const forkDesc = `Fork a run into copies that each get their own copy-on-write view of its files, in one group; returns the group, each fork's name, id, approach and address, and how its processes were started. ` +
	`With command, runs it in every fork at once (TINE_APPROACH holds the fork's approach) and returns each one's exit status and output tail, reporting each fork's end as progress; cancelling the call kills the command in every fork. ` +
	`With prompt, starts a fork-run in the daemon instead: an agent per fork (agent or agent_cmd) with its approach and budget, then the tests, a judge and the merge mode; it answers at once with the group: follow it with fork_report and fork_cost.`

func (t *tools) addBranchTools(s *sdk.Server) {
	add(s, &sdk.Tool{Name: "fork_run", Description: forkDesc, InputSchema: forkSchema(),
		Annotations: additive("Fork a run")}, t.forkRun)
	add(s, &sdk.Tool{Name: "fork_report", Description: "Where a fork-run (fork_run with prompt) stands: its outcome (running until it ends), the winner and the judge's verdict, and per fork its state, tests, files and lines changed, cost and score.",
		Annotations: readOnly("Fork-run report")}, t.report)
	add(s, &sdk.Tool{Name: "inspect_branches", Description: "Set a group's forks side by side (files and lines changed, readiness to merge, a recommendation), " +
		"or list a run and its direct forks; with neither, every run the caller may see.",
		Annotations: readOnly("Inspect forks")}, t.inspect)
	add(s, &sdk.Tool{Name: "diff_branches", Description: "What a run changed since its fork point: the changed paths with sizes, or with patch the unified diff of text files (cut to 64 KiB).",
		Annotations: readOnly("Diff a fork")}, t.diff)
	add(s, &sdk.Tool{Name: "merge_or_select", Description: mergeDesc, InputSchema: mergeSchema(),
		Annotations: destructive("Merge or select a fork")}, t.mergeOrSelect)
	add(s, &sdk.Tool{Name: "terminate_branch", Description: discardDesc,
		Annotations: destructive("Discard a fork")}, t.discard)
	add(s, &sdk.Tool{Name: "fork_cost", Description: "What a group's forks (or a run) cost. For a fork-run: each fork's spend and tokens, the total and the budget caps. For forks made otherwise tine records no cost: this says so and gives the changes each made.",
		Annotations: readOnly("Fork cost")}, t.cost)
}

const mergeDesc = `Carry a run's changes into its parent (or into), or with group resolve the group: keep run (merged, or promoted with promote) and discard the other forks. ` +
	`dry_run (default true) shows the plan and changes nothing. From inside a run the real thing is only requested: a person must approve it with "tine approve ID".`

const discardDesc = `Discard a run (or a whole group): its files are removed, its history kept. Unmerged work needs force. From inside a run this is only requested: a person must approve it with "tine approve ID".`

func (t *tools) addLifecycleTools(s *sdk.Server) {
	add(s, &sdk.Tool{Name: "fork", Description: "Fork a run into copies (fork_run without a prompt).", InputSchema: forkOnlySchema(),
		Annotations: additive("Fork")}, t.fork)
	add(s, &sdk.Tool{Name: "summary", Description: "A run's state: its processes, services and ports, and how many files it changed since its fork point.",
		Annotations: readOnly("Run summary")}, t.summary)
	add(s, &sdk.Tool{Name: "compare", Description: "Set a group's forks side by side: changes, readiness, a recommendation.",
		Annotations: readOnly("Compare a group")}, t.compare)
	add(s, &sdk.Tool{Name: "rollback", Description: "Make a run's files exactly those of an earlier version; the current files are saved as a version first.",
		Annotations: destructive("Roll back")}, t.rollback)
	add(s, &sdk.Tool{Name: "discard", Description: discardDesc,
		Annotations: destructive("Discard")}, t.discard)
}
