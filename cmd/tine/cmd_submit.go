package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fleet"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/internal/account"
)

// submitFlags are tine submit's command line.
type submitFlags struct {
	repo, commit, key      string
	prompt, command, agent string
	test                   string
	approaches             []string
	n, count               int
	budget, aggregate      float64
	asJSON                 bool
}

func newSubmit(a *app) *cobra.Command {
	var fl submitFlags
	c := &cobra.Command{
		Use:   "submit --repo URL|PATH [--commit C] (--prompt TEXT | --command CMD) [-n N] [--count K]",
		Short: "Queue fork-run tasks for a fleet of nodes",
		Long: `Queues a fork-run of a repository at a commit in the fleet's PostgreSQL
($TINE_FLEET_URL, else the store's when it is PostgreSQL's). A node with
capacity (tine serve --node) takes it, clones the repository at the commit,
takes the clone under management, runs the fork-run there in manual mode
(-n forks, the agent given --prompt, or --command as a command agent) and
stores the report, the winner's patch and commits. Follow with tine tasks;
bring the winner into your workspace with tine fetch TASK.

--count K queues K tasks alike. --key makes submitting idempotent: a task
submitted again with the same key (KEY-1…KEY-K with --count) is queued
once, and its id printed again. Prints the tasks' ids, one a line.

Budgets: --budget caps each task (its fork-run's forks together: the
fork-run's --aggregate-budget; each fork keeps [fork] default_budget_usd).
--aggregate-budget caps the batch: the tasks submitted together (one --key,
or one command). The nodes charge each task's spend to the batch in the
fleet's PostgreSQL as the task goes; a task that would start once the batch
spent its cap is not started (state skipped, saying how much was spent),
and the tasks running when the batch crosses its cap are stopped (their
forks budget_killed). Command agents report their spend with
{"tine_cost_usd": X} lines.

Exit status: 0 when queued, 2 for bad flags, 3 when the repository or the
commit is not found.`,
		Example: `  tine submit --repo ~/app --prompt "fix the failing test" -n 4
  tine submit --repo https://example.com/app.git --commit 1a2b3c --command ./try.sh -n 3 --count 12`,
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if a.remote() {
				return a.remoteSubmit(c.Context(), fl, c.Flags().Changed("budget"))
			}
			sub, err := fl.submission(c.Context(), c.Flags().Changed("budget"))
			if err != nil {
				return err
			}
			return a.withFleet(c.Context(), func(f *fleet.Fleet) error {
				return a.submit(c.Context(), f, sub, fl.asJSON)
			})
		},
	}
	f := c.Flags()
	f.StringVar(&fl.repo, "repo", "", "the repository: a URL or a path the nodes can clone")
	f.StringVar(&fl.commit, "commit", "", "the commit to start from (default the repository's HEAD)")
	f.StringVar(&fl.prompt, "prompt", "", "the task given to every agent")
	f.StringVar(&fl.command, "command", "", "run this shell command as a command agent (see tine fork-run --agent-cmd)")
	f.StringVar(&fl.agent, "agent", "", "agent: claude, codex, command or an [agent.NAME] of the repository's tine.toml")
	f.StringVar(&fl.test, "test", "", "test command run in each fork once its agent finished")
	f.StringArrayVar(&fl.approaches, "approach", nil, "approach of the next fork (repeatable)")
	f.IntVarP(&fl.n, "copies", "n", 0, "forks per task (default: the number of approaches, else 3)")
	f.IntVar(&fl.count, "count", 1, "tasks to queue, alike")
	f.StringVar(&fl.key, "key", "", "idempotency key: a task with this key is queued once")
	f.Float64Var(&fl.budget, "budget", 0, "budget of each task in USD: all its forks together (0 = none)")
	f.Float64Var(&fl.aggregate, "aggregate-budget", 0, "budget of the batch in USD: all the tasks submitted together (0 = none)")
	f.BoolVar(&fl.asJSON, "json", false, "print the tasks as JSON")
	return c
}

// submission checks the flags and returns the tasks they ask for;
// budget says whether --budget was given.
func (fl submitFlags) submission(ctx context.Context, budget bool) (*submission, error) {
	r, err := fl.request(budget)
	if err != nil {
		return nil, err
	}
	return taskSpecs(ctx, r, localOwner())
}

// request checks the flags and returns the submission they make.
func (fl submitFlags) request(budget bool) (submitRequest, error) {
	switch {
	case fl.prompt == "" && fl.command == "":
		return submitRequest{}, fmt.Errorf("give --prompt, --command or both: %w", tine.ErrInvalid)
	case fl.count < 1:
		return submitRequest{}, fmt.Errorf("--count %d: 1 to 1000: %w", fl.count, tine.ErrInvalid)
	case fl.n < 0:
		return submitRequest{}, fmt.Errorf("-n %d: %w", fl.n, tine.ErrInvalid)
	}
	prompt := fl.prompt
	if prompt == "" {
		prompt = fl.command // a command agent's task is its command (TINE_PROMPT)
	}
	req := forkrun.Request{Prompt: prompt, Approaches: fl.approaches, Agent: fl.agent, AgentCmd: fl.command}
	if fl.n > 0 {
		req.N = &fl.n
	}
	if fl.test != "" {
		req.Test = &fl.test
	}
	if budget {
		req.AggregateUSD = &fl.budget
	}
	return submitRequest{Repo: fl.repo, Commit: fl.commit, Request: req, Key: fl.key, Count: fl.count, BatchBudgetUSD: fl.aggregate}, nil
}

// remoteSubmit is tine submit through the system daemon: the tasks are
// the caller's (its uid and name recorded), a local repository named by
// its absolute path.
func (a *app) remoteSubmit(ctx context.Context, fl submitFlags, budget bool) error {
	r, err := fl.request(budget)
	if err != nil {
		return err
	}
	if st, err := os.Stat(r.Repo); err == nil && st.IsDir() {
		if r.Repo, err = filepath.Abs(r.Repo); err != nil {
			return err
		}
	}
	var out []submitted
	if _, err := a.daemon().Do(ctx, "POST", "/v1/fleet/tasks", r, &out); err != nil {
		return err
	}
	if fl.asJSON {
		return a.printJSON(out)
	}
	for _, s := range out {
		fmt.Fprintln(a.stdout, s.ID)
	}
	return nil
}

// submitRequest is a submission of tasks: tine submit's flags, and the
// body of POST /v1/fleet/tasks.
type submitRequest struct {
	Repo    string          `json:"repo"`
	Commit  string          `json:"commit,omitempty"` // default the repository's HEAD
	Request forkrun.Request `json:"request"`
	Key     string          `json:"key,omitempty"`
	Count   int             `json:"count,omitempty"` // default 1
	// BatchBudgetUSD caps what the tasks spend together (0: no cap); a
	// task's own cap is its request's aggregate_budget_usd.
	BatchBudgetUSD float64 `json:"batch_budget_usd,omitempty"`
}

// submission is a batch of tasks to queue: its key ("" for a fresh one),
// its cap and the tasks.
type submission struct {
	Key    string
	CapUSD float64
	Specs  []fleet.Spec
}

// taskOwner is who submits tasks: their uid and name (the tasks' owner),
// and user@host.
type taskOwner struct {
	UID      int
	Name, By string
}

// localOwner is this process's user.
func localOwner() taskOwner {
	uid := os.Getuid()
	return ownerOf(uid, account.Lookup(uid, os.Getgid()).Name)
}

// ownerOf is user uid called name, on this host.
func ownerOf(uid int, name string) taskOwner {
	host, _ := os.Hostname()
	return taskOwner{UID: uid, Name: name, By: name + "@" + host}
}

// taskSpecs checks r and returns the tasks it asks for, its repository
// resolved here (a local path made absolute) and its commit to a hash,
// owned by who.
func taskSpecs(ctx context.Context, r submitRequest, who taskOwner) (*submission, error) {
	if r.Count == 0 {
		r.Count = 1
	}
	switch {
	case r.Repo == "":
		return nil, fmt.Errorf("a task needs a repository (--repo): %w", tine.ErrInvalid)
	case r.Request.Prompt == "":
		return nil, fmt.Errorf("a task needs a prompt or a command agent (--prompt, --command): %w", tine.ErrInvalid)
	case r.Count < 1 || r.Count > 1000:
		return nil, fmt.Errorf("count %d: 1 to 1000: %w", r.Count, tine.ErrInvalid)
	case !(r.BatchBudgetUSD >= 0) || math.IsInf(r.BatchBudgetUSD, 0):
		return nil, fmt.Errorf("aggregate budget %v: 0 (none) or a positive amount of US dollars: %w", r.BatchBudgetUSD, tine.ErrInvalid)
	case r.Request.AggregateUSD != nil && (!(*r.Request.AggregateUSD >= 0) || math.IsInf(*r.Request.AggregateUSD, 0)):
		return nil, fmt.Errorf("budget %v: 0 (none) or a positive amount of US dollars: %w", *r.Request.AggregateUSD, tine.ErrInvalid)
	}
	repo, commit, err := fleet.ResolveRepo(ctx, r.Repo, r.Commit)
	if err != nil {
		return nil, err
	}
	out := &submission{Key: r.Key, CapUSD: r.BatchBudgetUSD}
	for i := range r.Count {
		s := fleet.Spec{Repo: repo, Commit: commit, Request: r.Request, By: who.By, OwnerUID: who.UID, Owner: who.Name, Key: r.Key}
		if r.Key != "" && r.Count > 1 {
			s.Key = fmt.Sprintf("%s-%d", r.Key, i+1)
		}
		out.Specs = append(out.Specs, s)
	}
	return out, nil
}

// submitted is one task tine submit queued.
type submitted struct {
	ID        string `json:"id"`
	Batch     string `json:"batch"`
	Duplicate bool   `json:"duplicate,omitempty"` // its key was submitted before: nothing new queued
}

// submit queues sub's tasks and prints their ids.
func (a *app) submit(ctx context.Context, f *fleet.Fleet, sub *submission, asJSON bool) error {
	out, err := submitAll(ctx, f, sub)
	if err != nil {
		return err
	}
	if asJSON {
		return a.printJSON(out)
	}
	for _, s := range out {
		fmt.Fprintln(a.stdout, s.ID)
	}
	return nil
}

// submitAll makes sub's batch and queues its tasks in order, charged to
// it.
func submitAll(ctx context.Context, f *fleet.Fleet, sub *submission) ([]submitted, error) {
	b, err := f.NewBatch(ctx, sub.Key, sub.CapUSD)
	if err != nil {
		return nil, err
	}
	var out []submitted
	for _, s := range sub.Specs {
		s.Batch = b.ID
		id, dup, err := f.Submit(ctx, s)
		if err != nil {
			return nil, err
		}
		out = append(out, submitted{ID: id, Batch: b.ID, Duplicate: dup})
	}
	return out, nil
}
