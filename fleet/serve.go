package fleet

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/tinehq/tine/internal/tick"
)

// DefaultBeat is a node's heartbeat period unless told otherwise.
const DefaultBeat = 5 * time.Second

// Runner runs task t on this node: makes its workspace, runs its
// fork-run and gathers the result. It must return when ctx ends.
type Runner func(ctx context.Context, t *Task) Result

// NodeConfig is how a node serves.
type NodeConfig struct {
	Info NodeInfo
	Run  Runner
	// Say prints a line about what the node does (tasks taken, done,
	// lost); nil prints nothing.
	Say func(format string, args ...any)
	// Retain, when positive, is how long after a task ended the node
	// keeps its workspace; then Clean releases it. 0 keeps them all.
	Retain time.Duration
	Clean  Cleaner
}

// Serve registers the node and serves it until ctx ends: it heartbeats,
// declares lost the nodes that stopped heartbeating (see Reap), and takes
// queued tasks, at most Info.Capacity at once, running each with Run. When
// ctx ends the tasks it runs are canceled and marked lost, and the node is
// recorded as stopped.
func (f *Fleet) Serve(ctx context.Context, c NodeConfig) error {
	say := c.Say
	if say == nil {
		say = func(string, ...any) {}
	}
	if c.Info.Beat <= 0 {
		c.Info.Beat = DefaultBeat
	}
	lost, err := f.Register(ctx, c.Info)
	if err != nil {
		return err
	}
	for _, id := range lost {
		say("task %s was running when node %s last stopped: marked lost", id, c.Info.Name)
	}
	if c.Info.Capacity == 0 {
		say("node %s: serving the fleet's API, taking no tasks (capacity 0)", c.Info.Name)
		f.tend(ctx, c.Info, nil, say)
		return f.Stop(context.WithoutCancel(ctx), c.Info.Name)
	}
	rc, err := f.workClient(c, say)
	if err != nil {
		return err
	}
	if err := rc.Start(ctx); err != nil {
		return fmt.Errorf("fleet: start taking tasks: %w", err)
	}
	say("node %s: taking up to %d tasks from %s", c.Info.Name, c.Info.Capacity, f.where)
	var cl *cleaner
	if c.Retain > 0 && c.Clean != nil {
		cl = &cleaner{f: f, node: c.Info.Name, retain: c.Retain, clean: c.Clean, said: map[string]bool{}}
	}
	f.tend(ctx, c.Info, cl, say)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err = rc.StopAndCancel(sctx)
	if serr := f.Stop(sctx, c.Info.Name); err == nil {
		err = serr
	}
	return err
}

// workClient returns the River client that works up to c's capacity of
// tasks at once.
func (f *Fleet) workClient(c NodeConfig, say func(string, ...any)) (*river.Client[pgx.Tx], error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, &worker{f: f, node: c.Info.Name, run: c.Run, say: say})
	rc, err := river.NewClient(riverpgxv5.New(f.pool), &river.Config{
		Logger:            f.logger,
		ID:                c.Info.Name,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: c.Info.Capacity}},
		Workers:           workers,
		JobTimeout:        -1, // a fork-run takes as long as its agents
		FetchCooldown:     50 * time.Millisecond,
		FetchPollInterval: time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: %w", err)
	}
	return rc, nil
}

// tend heartbeats, reaps and (with cl) cleans every beat until ctx ends.
func (f *Fleet) tend(ctx context.Context, n NodeInfo, cl *cleaner, say func(string, ...any)) {
	tick.Every(ctx, n.Beat, func() {
		if cl != nil {
			defer cl.sweep(ctx, say)
		}
		if err := f.Beat(ctx, n.Name); err != nil && ctx.Err() == nil {
			say("%v", err)
		}
		lost, err := f.Reap(ctx)
		if err != nil && ctx.Err() == nil {
			say("%v", err)
		}
		for _, l := range lost {
			say("task %s marked lost: %s", l.Task, l.Reason)
		}
	})
}

// worker works the fleet's River jobs on one node.
type worker struct {
	river.WorkerDefaults[taskArgs]
	f    *Fleet
	node string
	run  Runner
	say  func(string, ...any)
}

// Timeout implements river.Worker: none; a fork-run has its own.
func (w *worker) Timeout(*river.Job[taskArgs]) time.Duration { return -1 }

// Work claims the job's task and runs it. River delivers a job at least
// once; the claim (queued to running, in one statement) makes the task run
// at most once: a second delivery finds it running, lost or done and does
// nothing. An error is returned, and the job retried, only when the claim
// itself failed, before anything ran.
func (w *worker) Work(ctx context.Context, job *river.Job[taskArgs]) error {
	t, skipped, err := w.f.claim(ctx, job.Args.Task, w.node)
	if err != nil {
		return err
	}
	if skipped {
		w.say("task %s skipped: its batch's budget is spent", job.Args.Task)
		return nil
	}
	if t == nil {
		w.say("task %s is not queued any more: not run again", job.Args.Task)
		return nil
	}
	w.say("task %s taken by node %s", t.ID, w.node)
	res := w.run(ctx, t)
	bg := context.WithoutCancel(ctx)
	if ctx.Err() != nil {
		reason := fmt.Sprintf("node %s stopped while the task ran; not run again; its forks stay on %s", w.node, w.node)
		if err := w.f.markLost(bg, t.ID, w.node, reason); err != nil {
			w.say("task %s: %v", t.ID, err)
		}
		w.say("task %s marked lost: %s", t.ID, reason)
		return nil
	}
	ok, err := w.f.record(bg, t.ID, w.node, res)
	switch {
	case err != nil:
		w.say("task %s: %v", t.ID, err)
	case !ok:
		w.say("task %s ended after it was declared lost: its result is not recorded", t.ID)
	case res.Err != nil:
		w.say("task %s failed: %v", t.ID, res.Err)
	case res.Report == nil:
		w.say("task %s done", t.ID)
	default:
		w.say("task %s done: %s, winner %q", t.ID, res.Report.Outcome, res.Report.Winner)
	}
	return nil
}

var _ river.Worker[taskArgs] = (*worker)(nil)
