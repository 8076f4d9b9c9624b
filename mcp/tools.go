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
	Prompt             string   `json:"prompt,omitempty" jsonschema:"fork_run: the task; starts a fork-run in the daemon: an agent per fork, then tests, a judge, and the merge mode; follow it with fork_run_report"`
	Agent              string   `json:"agent,omitempty" jsonschema:"fork_run with prompt: claude, codex, command or an [agent.NAME] of tine.toml (default [fork] agent)"`
	AgentCmd           string   `json:"agent_cmd,omitempty" jsonschema:"fork_run with prompt: a shell command run as the agent in each fork (TINE_PROMPT, TINE_APPROACH set)"`
	Test               *string  `json:"test,omitempty" jsonschema:"fork_run with prompt: test command run by sh -c in each fork once its agent finished (default [fork] test_command)"`
	TestTimeoutS       float64  `json:"test_timeout_s,omitempty" jsonschema:"fork_run with prompt: seconds before the tests' process tree is killed (default 600)"`
	BudgetUSD          *float64 `json:"budget_usd,omitempty" jsonschema:"fork_run with prompt: per-fork budget in US dollars; 0: no cap (default [fork] default_budget_usd, else 5)"`
	AggregateBudgetUSD *float64 `json:"aggregate_budget_usd,omitempty" jsonschema:"fork_run with prompt: budget of all forks together in US dollars; 0: no cap"`
	MergeMode          string   `json:"merge_mode,omitempty" jsonschema:"fork_run with prompt: auto, auto_with_fallback (default), vote or manual; from inside a run only auto_with_fallback or manual"`
	Judge              string   `json:"judge,omitempty" jsonschema:"fork_run with prompt: heuristic (default) or llm (host only)"`
	Session            string   `json:"session,omitempty" jsonschema:"fork_run with prompt: the agent session every fork continues, each in a session of its own (default: the one the run's hook reported, else the newest session started in the workspace or below it)"`
	Fresh              bool     `json:"fresh,omitempty" jsonschema:"fork_run with prompt: start the agents without a conversation"`
}

// RunsInput names a group of forks or a run.
type RunsInput struct {
	Group string `json:"group,omitempty" jsonschema:"a group id (fork and fork_run return it)"`
	Run   string `json:"run,omitempty" jsonschema:"a run (id, WORKSPACE/NAME or name)"`
}

// DiffInput is the input of diff.
type DiffInput struct {
	Run   string `json:"run" jsonschema:"the run whose changes since its fork point to show"`
	Patch bool   `json:"patch,omitempty" jsonschema:"the unified diff of text files instead of the list of changed paths"`
}

// MergeInput is the input of merge.
type MergeInput struct {
	Run     string `json:"run" jsonschema:"the run to merge"`
	Into    string `json:"into,omitempty" jsonschema:"merge target; default and, from inside a run, only choice: the run's parent"`
	DryRun  *bool  `json:"dry_run,omitempty" jsonschema:"only show the plan; default true"`
	Promote bool   `json:"promote,omitempty" jsonschema:"make run the workspace's source instead of merging it (tine promote)"`
}

// ChooseInput is the input of choose.
type ChooseInput struct {
	Group   string `json:"group" jsonschema:"the group to resolve"`
	Run     string `json:"run" jsonschema:"the group's fork to keep"`
	DryRun  *bool  `json:"dry_run,omitempty" jsonschema:"only show the plan and what would be discarded; default true"`
	Promote bool   `json:"promote,omitempty" jsonschema:"make run the workspace's source instead of merging it into the group's parent"`
}

// DiscardInput is the input of discard.
type DiscardInput struct {
	Run   string `json:"run" jsonschema:"the run, or a group id for all its live forks, to discard"`
	Force bool   `json:"force,omitempty" jsonschema:"discard even unmerged work, or while commands run in it"`
}

// ListInput is the input of list_runs.
type ListInput struct {
	Run string `json:"run,omitempty" jsonschema:"a run (id, WORKSPACE/NAME or name): list it and its direct forks; default every live run the caller may see"`
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

// forkRunSchema bounds copies and the fork-run's numbers, and lists the
// merge modes and judges.
func forkRunSchema() *jsonschema.Schema {
	return schemaFor[ForkInput](func(p map[string]*jsonschema.Schema) {
		p["copies"].Minimum, p["copies"].Maximum = ptr(1.0), ptr(float64(MaxCopies))
		for _, k := range []string{"timeout_s", "test_timeout_s", "budget_usd", "aggregate_budget_usd"} {
			p[k].Minimum = ptr(0.0)
		}
		p["merge_mode"].Enum = []any{"auto", "auto_with_fallback", "vote", "manual"}
		p["judge"].Enum = []any{"heuristic", "llm", "pairwise"}
	})
}

// forkSchema is forkRunSchema without what runs in the forks.
func forkSchema() *jsonschema.Schema {
	s := forkRunSchema()
	for _, k := range []string{"command", "timeout_s", "prompt", "agent", "agent_cmd", "test", "test_timeout_s",
		"budget_usd", "aggregate_budget_usd", "merge_mode", "judge", "session", "fresh"} {
		delete(s.Properties, k)
	}
	return s
}

// dryRunSchema says dry_run defaults to true.
func dryRunSchema[In any]() *jsonschema.Schema {
	return schemaFor[In](func(p map[string]*jsonschema.Schema) {
		p["dry_run"].Default = []byte("true")
	})
}

// The tools' descriptions say what each does as the CLI command of the same
// name does it, and when to use it rather than its neighbours.
const (
	forkDesc = `Fork a run into copies (tine fork), each with its own copy-on-write view of the run's files, in one group; nothing runs in them. ` +
		`Returns the group, each fork's name, id, approach and address. Use fork_run instead to run a command or an agent in every fork.`
	forkRunDesc = `Fork a run and run something in every fork (tine fork-run). ` +
		`With command: runs it in every fork at once (TINE_APPROACH holds the fork's approach), waits, and returns each one's exit status and output tail, reporting each fork's end as progress; cancelling the call, or cancel_fork_run, kills the command in every fork. ` +
		`With prompt: starts a fork-run in the daemon (an agent per fork with its approach and budget, then the tests, a judge and the merge mode) and answers at once with the group: follow it with fork_run_report, stop it with cancel_fork_run. ` +
		`Use fork instead to only make the forks.`
	reportDesc = `Where a fork-run (fork_run with prompt) stands: its outcome (running until it ends), the winner and the judge's verdict, and per fork its state and why, tests, files and lines changed, cost and score. ` +
		`Use summary for one fork's whole evidence, cost for the spend.`
	cancelDesc = `Stop a whole fork-run (tine fork-run interrupted): a fork_run with prompt running in the daemon, or a fork_run with command running in its forks (from this session or another). ` +
		`Every fork's agent, tests or command are killed, the forks kept; it waits for the end and says what happened to each fork. Use discard afterwards to drop forks, or to stop and drop one fork.`
	listDesc    = `List live runs (tine ls): with run, that run and its direct forks; with neither, every run the caller may see. Use compare to set one group's forks side by side.`
	compareDesc = `Set a group's forks side by side (tine compare): files and lines changed, readiness to merge, a recommendation. Use diff for what one fork changed, fork_run_report for a fork-run's agents and verdict.`
	diffDesc    = `What a run changed since its fork point (tine diff): the changed paths with sizes, or with patch the unified diff of text files (cut to 64 KiB).`
	mergeDesc   = `Carry a run's changes into its parent or into (tine merge), or with promote make it the workspace's source (tine promote). ` +
		`dry_run (default true) shows the plan and changes nothing. Use choose instead to keep one fork of a group and discard its others. From inside a run the real thing is only requested: a person must approve it with "tine approve ID".`
	chooseDesc = `Resolve a group (tine choose): keep run (merged into the group's parent, or promoted with promote) and discard the group's other forks. ` +
		`dry_run (default true) shows the plan and what would be discarded. From inside a run the real thing is only requested: a person must approve it with "tine approve ID".`
	discardDesc = `Discard a run, or every live fork of a group (tine discard): its processes are stopped, its files removed, its history kept. Unmerged work, or a command running in it, needs force. ` +
		`Use cancel_fork_run to stop a fork-run and keep its forks, choose to keep one fork of a group and discard the rest. From inside a run this is only requested: a person must approve it with "tine approve ID".`
	costDesc    = `What a group's forks (or one run) cost (tine cost). For a fork-run: each fork's spend and tokens, the total and the budget caps. For forks made otherwise tine records no cost: this says so and gives the changes each made.`
	summaryDesc = `One fork of a fork-run in full (tine summary): its state, the agent's exit status, output tail, tool calls, tokens and cost, the tests' result, what it changed, and whether it is ready to merge. ` +
		`Use ps for a run's processes, fork_run_report for all the forks at once.`
	psDesc       = `A run's processes (tine ps): its state, processes, services and ports, and how many files it changed since its fork point.`
	rollbackDesc = `Make a run's files exactly those of an earlier version (tine rollback); the current files are saved as a version first.`
)

func (t *tools) addForkTools(s *sdk.Server) {
	add(s, &sdk.Tool{Name: "fork", Description: forkDesc, InputSchema: forkSchema(),
		Annotations: additive("Fork")}, t.fork)
	add(s, &sdk.Tool{Name: "fork_run", Description: forkRunDesc, InputSchema: forkRunSchema(),
		Annotations: additive("Fork and run")}, t.forkRun)
	add(s, &sdk.Tool{Name: "fork_run_report", Description: reportDesc,
		Annotations: readOnly("Fork-run report")}, t.report)
	add(s, &sdk.Tool{Name: "cancel_fork_run", Description: cancelDesc,
		Annotations: destructive("Cancel a fork-run")}, t.cancelForkRun)
}

func (t *tools) addReadTools(s *sdk.Server) {
	add(s, &sdk.Tool{Name: "list_runs", Description: listDesc, Annotations: readOnly("List runs")}, t.listRuns)
	add(s, &sdk.Tool{Name: "compare", Description: compareDesc, Annotations: readOnly("Compare a group")}, t.compare)
	add(s, &sdk.Tool{Name: "diff", Description: diffDesc, Annotations: readOnly("Diff a run")}, t.diff)
	add(s, &sdk.Tool{Name: "cost", Description: costDesc, Annotations: readOnly("Cost")}, t.cost)
	add(s, &sdk.Tool{Name: "summary", Description: summaryDesc, Annotations: readOnly("Fork summary")}, t.summary)
	add(s, &sdk.Tool{Name: "ps", Description: psDesc, Annotations: readOnly("Run processes")}, t.ps)
}

func (t *tools) addResolveTools(s *sdk.Server) {
	add(s, &sdk.Tool{Name: "merge", Description: mergeDesc, InputSchema: dryRunSchema[MergeInput](),
		Annotations: destructive("Merge or promote a run")}, t.mergeRun)
	add(s, &sdk.Tool{Name: "choose", Description: chooseDesc, InputSchema: dryRunSchema[ChooseInput](),
		Annotations: destructive("Choose a group's fork")}, t.choose)
	add(s, &sdk.Tool{Name: "discard", Description: discardDesc,
		Annotations: destructive("Discard")}, t.discard)
	add(s, &sdk.Tool{Name: "rollback", Description: rollbackDesc,
		Annotations: destructive("Roll back")}, t.rollback)
}
