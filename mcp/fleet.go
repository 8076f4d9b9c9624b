package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tinehq/tine/fleet"
	"github.com/tinehq/tine/forkrun"
)

// SubmitTasksInput is the input of submit_tasks: what tine submit takes.
type SubmitTasksInput struct {
	Repo               string   `json:"repo" jsonschema:"the repository: a URL, or an absolute path the daemon and the nodes can read"`
	Commit             string   `json:"commit,omitempty" jsonschema:"the commit to start from (default the repository's HEAD)"`
	Prompt             string   `json:"prompt,omitempty" jsonschema:"the task given to every agent"`
	Agent              string   `json:"agent,omitempty" jsonschema:"claude, codex, command or an [agent.NAME] of the repository's tine.toml"`
	AgentCmd           string   `json:"agent_cmd,omitempty" jsonschema:"a shell command run as the agent in each fork (a command agent)"`
	Test               *string  `json:"test,omitempty" jsonschema:"test command run in each fork once its agent finished"`
	Copies             int      `json:"copies,omitempty" jsonschema:"forks per task (default: the number of approaches, else 3)"`
	Approaches         []string `json:"approaches,omitempty" jsonschema:"what each fork of a task is for"`
	Count              int      `json:"count,omitempty" jsonschema:"tasks to queue, alike, 1 to 1000 (default 1)"`
	Key                string   `json:"key,omitempty" jsonschema:"idempotency key: tasks submitted again with it are queued once (KEY-1…KEY-K with count)"`
	BudgetUSD          *float64 `json:"budget_usd,omitempty" jsonschema:"budget of each task in US dollars: all its forks together (0: none)"`
	AggregateBudgetUSD float64  `json:"aggregate_budget_usd,omitempty" jsonschema:"budget of the batch in US dollars: all the tasks submitted together; a task that would start once it is spent is skipped, and those running when it is crossed are stopped (0: none)"`
}

// ListTasksInput is the input of list_tasks.
type ListTasksInput struct {
	State string `json:"state,omitempty" jsonschema:"only the tasks in this state: queued, running, done, failed, lost or skipped"`
}

// CancelTasksInput is the input of cancel_tasks: what tine tasks cancel
// takes.
type CancelTasksInput struct {
	Tasks []string `json:"tasks" jsonschema:"the ids of the tasks to withdraw: a queued one never runs, a running one is stopped by its node"`
}

// canceledTask is POST /v1/fleet/tasks/{id}/cancel's answer, or why
// there was none.
type canceledTask struct {
	fleet.Withdrawal
	Error string `json:"error,omitempty"` // why it was not canceled
}

// submitBody is POST /v1/fleet/tasks's body.
type submitBody struct {
	Repo           string          `json:"repo"`
	Commit         string          `json:"commit,omitempty"`
	Request        forkrun.Request `json:"request"`
	Key            string          `json:"key,omitempty"`
	Count          int             `json:"count,omitempty"`
	BatchBudgetUSD float64         `json:"batch_budget_usd,omitempty"`
}

// submittedTask is one task POST /v1/fleet/tasks queued.
type submittedTask struct {
	ID        string `json:"id"`
	Batch     string `json:"batch"`
	Duplicate bool   `json:"duplicate,omitempty"`
}

// fleetStatus is GET /v1/fleet's answer.
type fleetStatus struct {
	Nodes []fleet.Node   `json:"nodes"`
	Tasks []*fleet.Task  `json:"tasks"`
	Queue map[string]int `json:"queue"`
}

const submitTasksDesc = `Queue fork-run tasks for the fleet of nodes that share this tine's PostgreSQL (tine submit): a node with capacity clones the repository at the commit, runs the fork-run there (copies forks, the agent given prompt, or agent_cmd), and stores the report and the winner's patch and commits. ` +
	`Follow them with list_tasks; a person brings a winner into their workspace with "tine fetch TASK" and merges it. For root and the daemon's own user; not from inside a run.`

const listTasksDesc = `The fleet's nodes (state, capacity, tasks running, last heartbeat) and tasks (state, node, outcome, winner, cost, and why a task failed, was lost or skipped), as tine tasks shows them. For root and the daemon's own user.`

const cancelTasksDesc = `Withdraw fleet tasks (tine tasks cancel): a queued task is canceled and never runs; a running one is stopped by its node within a second (its agents killed, its forks' work kept on that node) and recorded canceled, saying who canceled it. ` +
	`Each task's state after is answered, or why it was not canceled (it had ended, or there is no such task). For root and the daemon's own user; not from inside a run.`

func (t *tools) addFleetTools(s *sdk.Server) {
	add(s, &sdk.Tool{Name: "cancel_tasks", Description: cancelTasksDesc, InputSchema: schemaFor[CancelTasksInput](nil),
		Annotations: &sdk.ToolAnnotations{Title: "Withdraw fleet tasks", DestructiveHint: ptr(true), OpenWorldHint: ptr(false)}}, t.cancelTasks)
	add(s, &sdk.Tool{Name: "submit_tasks", Description: submitTasksDesc, InputSchema: schemaFor[SubmitTasksInput](nil),
		Annotations: &sdk.ToolAnnotations{Title: "Queue fleet tasks", DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}}, t.submitTasks)
	add(s, &sdk.Tool{Name: "list_tasks", Description: listTasksDesc, InputSchema: schemaFor[ListTasksInput](nil),
		Annotations: &sdk.ToolAnnotations{Title: "The fleet's nodes and tasks", ReadOnlyHint: true, OpenWorldHint: ptr(false)}}, t.listTasks)
}

func (t *tools) submitTasks(ctx context.Context, in SubmitTasksInput) (*answer, error) {
	switch {
	case in.Repo == "":
		return nil, inputErr("repo is required")
	case !strings.Contains(in.Repo, ":") && !filepath.IsAbs(in.Repo):
		return nil, inputErr("repo %q: give a URL or an absolute path (the daemon resolves it, not this server's directory)", in.Repo)
	case in.Prompt == "" && in.AgentCmd == "":
		return nil, inputErr("give prompt, agent_cmd or both")
	case in.Copies < 0:
		return nil, inputErr("copies %d: 1 or more", in.Copies)
	}
	req := forkrun.Request{Prompt: in.Prompt, Agent: in.Agent, AgentCmd: in.AgentCmd, Test: in.Test,
		Approaches: in.Approaches, AggregateUSD: in.BudgetUSD}
	if req.Prompt == "" {
		req.Prompt = in.AgentCmd // a command agent's task is its command
	}
	if in.Copies > 0 {
		req.N = &in.Copies
	}
	body := submitBody{Repo: in.Repo, Commit: in.Commit, Request: req, Key: in.Key, Count: in.Count, BatchBudgetUSD: in.AggregateBudgetUSD}
	var out []submittedTask
	if _, err := t.api.Do(ctx, "POST", "/v1/fleet/tasks", body, &out); err != nil {
		return nil, unreachable(err)
	}
	note := fmt.Sprintf("queued %d task(s)", len(out))
	if len(out) > 0 {
		note += " in batch " + out[0].Batch
	}
	return &answer{Note: note + "; follow them with list_tasks", Data: map[string]any{"tasks": out}}, nil
}

func (t *tools) cancelTasks(ctx context.Context, in CancelTasksInput) (*answer, error) {
	if len(in.Tasks) == 0 {
		return nil, inputErr("tasks is required: the ids of the tasks to withdraw")
	}
	out := make([]canceledTask, 0, len(in.Tasks))
	n := 0
	for _, id := range in.Tasks {
		var c canceledTask
		if _, err := t.api.Do(ctx, "POST", "/v1/fleet/tasks/"+url.PathEscape(id)+"/cancel", nil, &c); err != nil {
			if ue := (*url.Error)(nil); errors.As(err, &ue) {
				return nil, unreachable(err) // the daemon, not the task
			}
			c = canceledTask{Withdrawal: fleet.Withdrawal{Task: id}, Error: err.Error()}
		} else {
			n++
		}
		out = append(out, c)
	}
	return &answer{Note: fmt.Sprintf("%d of %d task(s) canceled or being stopped; follow them with list_tasks", n, len(in.Tasks)), Data: map[string]any{"tasks": out}}, nil
}

func (t *tools) listTasks(ctx context.Context, in ListTasksInput) (*answer, error) {
	var st fleetStatus
	if _, err := t.api.Do(ctx, "GET", "/v1/fleet", nil, &st); err != nil {
		return nil, unreachable(err)
	}
	if in.State != "" {
		var keep []*fleet.Task
		for _, tk := range st.Tasks {
			if tk.State == in.State {
				keep = append(keep, tk)
			}
		}
		st.Tasks = keep
	}
	if st.Tasks == nil {
		st.Tasks = []*fleet.Task{}
	}
	var counts []string
	for _, s := range fleet.TaskStates {
		counts = append(counts, fmt.Sprintf("%d %s", st.Queue[s], s))
	}
	return &answer{Note: fmt.Sprintf("%d node(s); tasks: %s", len(st.Nodes), strings.Join(counts, ", ")), Data: st}, nil
}
