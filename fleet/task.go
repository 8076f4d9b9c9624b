package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/forkrun"
)

// PrefixTask is the prefix of a task's id.
const PrefixTask = "t"

// The states of a task. Done, Failed and Lost are final.
const (
	TaskQueued   = "queued"   // waiting for a node with capacity
	TaskRunning  = "running"  // a node took it and runs its fork-run
	TaskDone     = "done"     // its fork-run ended; Outcome and Winner say how
	TaskFailed   = "failed"   // the node could not make its workspace or run it
	TaskLost     = "lost"     // its node stopped while it ran; never run again
	TaskSkipped  = "skipped"  // not started: its batch's budget was spent (Reason says how much)
	TaskCanceled = "canceled" // withdrawn before a node took it, or stopped while it ran (Withdraw); Reason says by whom
)

// ErrCanceled is what a task's run ends with when it was withdrawn while
// it ran (Withdraw): its forks were stopped, and it is recorded canceled.
var ErrCanceled = errors.New("the task was withdrawn while it ran")

// TaskStates are the states of a task, in the order a task goes through
// them and then the final ones: how lists of them are shown.
var TaskStates = []string{TaskQueued, TaskRunning, TaskDone, TaskFailed, TaskLost, TaskSkipped, TaskCanceled}

// Spec is a task as submitted: a fork-run of a repository at a commit.
type Spec struct {
	Repo    string          `json:"repo"`   // a URL or a path the nodes can clone
	Commit  string          `json:"commit"` // the commit to start from (full hash)
	Request forkrun.Request `json:"request"`
	// Key makes submitting idempotent: a second Submit with the same key
	// returns the first's task and queues nothing. "" gives a fresh key.
	Key string `json:"key,omitempty"`
	// By says who submitted (user@host).
	By string `json:"submitted_by,omitempty"`
	// OwnerUID and Owner are the user the task is theirs (on the machine
	// whose daemon they submitted through): what they see of the fleet
	// (TasksOf). OwnerUID -1 is nobody's: only those who see every task
	// see it.
	OwnerUID int    `json:"owner_uid"`
	Owner    string `json:"owner,omitempty"`
	// Batch is the batch the task is charged to (see NewBatch); "" for
	// none.
	Batch string `json:"batch,omitempty"`
}

// Task is a task and where it stands.
type Task struct {
	ID          string          `json:"id"`
	Key         string          `json:"key"`
	Repo        string          `json:"repo"`
	Commit      string          `json:"commit"`
	Request     forkrun.Request `json:"request"`
	By          string          `json:"submitted_by"`
	OwnerUID    int             `json:"owner_uid"`
	Owner       string          `json:"owner,omitempty"`
	Batch       string          `json:"batch,omitempty"`
	CostUSD     float64         `json:"cost_usd"` // what its forks spent, as its node charged it to the batch
	State       string          `json:"state"`
	Reason      string          `json:"reason,omitempty"`
	Node        string          `json:"node,omitempty"`
	Workspace   string          `json:"workspace,omitempty"`
	Outcome     string          `json:"outcome,omitempty"`
	Winner      string          `json:"winner,omitempty"`
	Commits     []string        `json:"commits,omitempty"` // the winner's commits since Commit, oldest first: "hash subject"
	Head        string          `json:"head,omitempty"`    // the winner's HEAD, when it made commits
	HasPatch    bool            `json:"has_patch"`
	HasBundle   bool            `json:"has_bundle"` // its commits are stored (Bundle), for tine fetch to replay
	SubmittedAt time.Time       `json:"submitted_at"`
	StartedAt   *time.Time      `json:"started_at,omitempty"`
	FinishedAt  *time.Time      `json:"finished_at,omitempty"`
	// CleanedAt is when its node released its workspace, past its
	// retention (NodeConfig.Retain); its results stay here.
	CleanedAt *time.Time `json:"cleaned_at,omitempty"`
	// Report is the fork-run's report; only Task fills it.
	Report *forkrun.Report `json:"report,omitempty"`
}

// Final reports whether t's state is final.
func (t *Task) Final() bool {
	return t.State == TaskDone || t.State == TaskFailed || t.State == TaskLost || t.State == TaskSkipped ||
		t.State == TaskCanceled
}

// taskArgs is a task's River job: only its id; the task's row is the
// truth about it.
type taskArgs struct {
	Task string `json:"task"`
}

// Kind implements river.JobArgs.
func (taskArgs) Kind() string { return "tine_task" }

// InsertOpts implements river.JobArgsWithInsertOpts: one job per task
// however often it is inserted, and attempts only for failures before the
// task was claimed (see Worker).
func (taskArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 5, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

// Submit queues the task spec describes, with its row and its River job
// in one transaction, and returns its id. A key submitted before returns
// the task it made, queued once.
func (f *Fleet) Submit(ctx context.Context, s Spec) (id string, dup bool, err error) {
	if s.Repo == "" || s.Commit == "" {
		return "", false, fmt.Errorf("a task needs a repository and a commit: %w", tine.ErrInvalid)
	}
	req, err := json.Marshal(s.Request)
	if err != nil {
		return "", false, err
	}
	id = tine.NewID(PrefixTask)
	if s.Key == "" {
		s.Key = id
	}
	err = pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO fleet_tasks (id, key, repo, commit, request, submitted_by, batch, owner_uid, owner, state)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'queued') ON CONFLICT (key) DO NOTHING RETURNING id`,
			id, s.Key, s.Repo, s.Commit, string(req), s.By, s.Batch, s.OwnerUID, s.Owner).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			dup = true
			return tx.QueryRow(ctx, "SELECT id FROM fleet_tasks WHERE key = $1", s.Key).Scan(&id)
		}
		if err != nil {
			return err
		}
		_, err = f.river.InsertTx(ctx, tx, taskArgs{Task: id}, nil)
		return err
	})
	if err != nil {
		return "", false, fmt.Errorf("fleet: submit: %w", err)
	}
	return id, dup, nil
}

// Withdrawal is what Withdraw did to a task.
type Withdrawal struct {
	Task string `json:"task"`
	Was  string `json:"was"` // its state before
	// State is its state after: TaskCanceled, TaskRunning (being stopped)
	// or the final state it had reached (nothing to withdraw).
	State string `json:"state"`
	Node  string `json:"node,omitempty"` // where it runs or ran
}

// Withdraw cancels task id, saying reason: a queued task is canceled at
// once and never runs (the claim, which locks the same row, then finds
// nothing queued); for a running one the request is recorded, and its
// node stops its forks at its next look (within a quarter of a second,
// see meter) and records it canceled, its forks' work kept on the node.
// tine.ErrNotFound when there is no such task.
func (f *Fleet) Withdraw(ctx context.Context, id, reason string) (*Withdrawal, error) {
	w := &Withdrawal{Task: id}
	err := pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, "SELECT state, node FROM fleet_tasks WHERE id = $1 FOR UPDATE", id).Scan(&w.Was, &w.Node)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("task %s: %w", id, tine.ErrNotFound)
		}
		if err != nil {
			return err
		}
		w.State = w.Was
		switch w.Was {
		case TaskQueued:
			w.State = TaskCanceled
			_, err = tx.Exec(ctx, "UPDATE fleet_tasks SET state = 'canceled', reason = $2, finished_at = now() WHERE id = $1", id, reason)
		case TaskRunning: // the first asker's reason stays
			_, err = tx.Exec(ctx, "UPDATE fleet_tasks SET cancel = $2 WHERE id = $1 AND cancel = ''", id, reason)
		}
		return err
	})
	if errors.Is(err, tine.ErrNotFound) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("fleet: withdraw task %s: %w", id, err)
	}
	return w, nil
}

// taskColumns are the columns scanTask reads, report aside.
const taskColumns = `id, key, repo, commit, request::text, submitted_by, owner_uid, owner, batch, cost_usd, state, reason, node, workspace,
	outcome, winner, commits, head, patch IS NOT NULL, bundle IS NOT NULL, submitted_at, started_at, finished_at, cleaned_at`

// scanTask reads a row of taskColumns.
func scanTask(r pgx.Row, extra ...any) (*Task, error) {
	var t Task
	var req string
	dest := append([]any{&t.ID, &t.Key, &t.Repo, &t.Commit, &req, &t.By, &t.OwnerUID, &t.Owner, &t.Batch, &t.CostUSD, &t.State, &t.Reason, &t.Node,
		&t.Workspace, &t.Outcome, &t.Winner, &t.Commits, &t.Head, &t.HasPatch, &t.HasBundle, &t.SubmittedAt, &t.StartedAt, &t.FinishedAt, &t.CleanedAt}, extra...)
	if err := r.Scan(dest...); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(req), &t.Request); err != nil {
		return nil, fmt.Errorf("task %s: request: %w", t.ID, err)
	}
	t.SubmittedAt = t.SubmittedAt.UTC()
	return &t, nil
}

// Tasks lists the tasks in the order they were submitted.
func (f *Fleet) Tasks(ctx context.Context) ([]*Task, error) {
	return f.tasks(ctx, "SELECT "+taskColumns+" FROM fleet_tasks ORDER BY ord")
}

// TasksOf lists the tasks of user uid called name (Spec.OwnerUID and
// Owner: both must match), in the order they were submitted.
func (f *Fleet) TasksOf(ctx context.Context, uid int, name string) ([]*Task, error) {
	return f.tasks(ctx, "SELECT "+taskColumns+" FROM fleet_tasks WHERE owner_uid = $1 AND owner = $2 ORDER BY ord", uid, name)
}

// tasks lists the tasks query selects.
func (f *Fleet) tasks(ctx context.Context, query string, args ...any) ([]*Task, error) {
	rows, err := f.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("fleet: tasks: %w", err)
	}
	defer rows.Close()
	var out []*Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("fleet: tasks: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// Mine reports whether t is the task of user uid called name (TasksOf).
func (t *Task) Mine(uid int, name string) bool { return t.OwnerUID == uid && t.Owner == name }

// Task returns task id with its report; tine.ErrNotFound when there is
// no such task.
func (f *Fleet) Task(ctx context.Context, id string) (*Task, error) {
	var report *string
	t, err := scanTask(f.pool.QueryRow(ctx, "SELECT "+taskColumns+", report::text FROM fleet_tasks WHERE id = $1", id), &report)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("task %s: %w", id, tine.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("fleet: task %s: %w", id, err)
	}
	if report != nil {
		t.Report = new(forkrun.Report)
		if err := json.Unmarshal([]byte(*report), t.Report); err != nil {
			return nil, fmt.Errorf("fleet: task %s: report: %w", id, err)
		}
	}
	return t, nil
}

// TaskByKey returns the id of the task submitted with key;
// tine.ErrNotFound when none was.
func (f *Fleet) TaskByKey(ctx context.Context, key string) (string, error) {
	var id string
	err := f.pool.QueryRow(ctx, "SELECT id FROM fleet_tasks WHERE key = $1", key).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("task of key %s: %w", key, tine.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("fleet: task of key %s: %w", key, err)
	}
	return id, nil
}

// Patch returns the binary patch (git apply) that takes task id's commit
// to its winner's files; tine.ErrNotFound when it has none.
func (f *Fleet) Patch(ctx context.Context, id string) ([]byte, error) {
	var p []byte
	err := f.pool.QueryRow(ctx, "SELECT patch FROM fleet_tasks WHERE id = $1", id).Scan(&p)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("task %s: %w", id, tine.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("fleet: task %s: %w", id, err)
	}
	if p == nil {
		return nil, fmt.Errorf("task %s has no winner's patch: %w", id, tine.ErrNotFound)
	}
	return p, nil
}

// Bundle returns the git bundle of the commits task id's winner made
// since the task's commit, nil when it made none (or the task has no
// winner).
func (f *Fleet) Bundle(ctx context.Context, id string) ([]byte, error) {
	var b []byte
	err := f.pool.QueryRow(ctx, "SELECT bundle FROM fleet_tasks WHERE id = $1", id).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("task %s: %w", id, tine.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("fleet: task %s: %w", id, err)
	}
	return b, nil
}

// claim moves task id from queued to running on node, and returns it; nil
// when it is not queued (another delivery of its job ran it, or it was
// lost): a task runs at most once. A task whose batch's budget is spent
// is not started: it becomes skipped, saying how much was spent, and
// claim returns nil with skipped set.
func (f *Fleet) claim(ctx context.Context, id, node string) (t *Task, skipped bool, err error) {
	err = pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		var b Batch
		err := tx.QueryRow(ctx, `SELECT coalesce(b.id, ''), coalesce(b.cap_usd, 0), coalesce(b.spent_usd, 0)
			FROM fleet_tasks t LEFT JOIN fleet_batches b ON b.id = t.batch
			WHERE t.id = $1 AND t.state = 'queued' FOR UPDATE OF t`, id).Scan(&b.ID, &b.CapUSD, &b.SpentUSD)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if b.Spent() {
			skipped = true
			_, err := tx.Exec(ctx, `UPDATE fleet_tasks SET state = 'skipped', reason = $2, node = $3, finished_at = now() WHERE id = $1`,
				id, fmt.Sprintf("budget: batch %s had spent %s of its %s cap before the task started; not started", b.ID, usd(b.SpentUSD), usd(b.CapUSD)), node)
			return err
		}
		t, err = scanTask(tx.QueryRow(ctx, `UPDATE fleet_tasks SET state = 'running', node = $2, started_at = now()
			WHERE id = $1 RETURNING `+taskColumns, id, node))
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("fleet: claim task %s: %w", id, err)
	}
	return t, skipped, nil
}

// Result is what running a task produced.
type Result struct {
	Workspace string
	Report    *forkrun.Report
	Patch     []byte   // nil: no winner
	Commits   []string // "hash subject", oldest first
	Head      string   // the winner's HEAD, when it made commits
	Bundle    []byte   // its commits since the task's commit (git bundle), nil for none
	Err       error    // the task failed: why
	Note      string   // why a task that did not fail was cut short (its batch's budget)
}

// record stores r as task id's result, if the task is still running on
// node; it reports whether it did (a task declared lost stays lost).
func (f *Fleet) record(ctx context.Context, id, node string, r Result) (bool, error) {
	state, reason := TaskDone, r.Note
	switch {
	case errors.Is(r.Err, ErrCanceled):
		state = TaskCanceled
	case r.Err != nil && r.Note != "":
		state, reason = TaskFailed, r.Note+" ("+r.Err.Error()+")"
	case r.Err != nil:
		state, reason = TaskFailed, r.Err.Error()
	}
	var report *string
	var outcome, winner string
	if r.Report != nil {
		b, err := json.Marshal(r.Report)
		if err != nil {
			return false, err
		}
		report = new(string(b))
		outcome, winner = r.Report.Outcome, r.Report.Winner
	}
	tag, err := f.pool.Exec(ctx, `UPDATE fleet_tasks SET state = $3, reason = $4, workspace = $5, report = $6::json,
			outcome = $7, winner = $8, patch = $9, commits = $10, head = $11, bundle = $12, finished_at = now()
		WHERE id = $1 AND node = $2 AND state = 'running'`,
		id, node, state, reason, r.Workspace, report, outcome, winner, r.Patch, nonNil(r.Commits), r.Head, r.Bundle)
	if err != nil {
		return false, fmt.Errorf("fleet: record task %s: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// markLost marks task id lost with reason if it still runs on node.
func (f *Fleet) markLost(ctx context.Context, id, node, reason string) error {
	_, err := f.pool.Exec(ctx, `UPDATE fleet_tasks SET state = 'lost', reason = $3, finished_at = now()
		WHERE id = $1 AND node = $2 AND state = 'running'`, id, node, reason)
	return err
}
