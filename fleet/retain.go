package fleet

import (
	"context"
	"fmt"
	"time"
)

// Cleaner releases the workspace task t made on this node and removes
// what is left of it (its clone). A node calls it once t ended longer ago
// than its retention (NodeConfig.Retain): t's results (report, winner's
// patch and commits) stay in the fleet, for tine fetch.
type Cleaner func(ctx context.Context, t *Task) error

// toClean lists the tasks node ran that ended more than retain ago and
// whose workspace it has not cleaned, oldest first.
func (f *Fleet) toClean(ctx context.Context, node string, retain time.Duration) ([]*Task, error) {
	return f.tasks(ctx, "SELECT "+taskColumns+` FROM fleet_tasks
		WHERE node = $1 AND state NOT IN ('queued', 'running') AND workspace <> '' AND cleaned_at IS NULL
			AND finished_at < now() - make_interval(secs => $2) ORDER BY ord`, node, retain.Seconds())
}

// cleaner cleans the workspaces of a node's tasks past its retention.
type cleaner struct {
	f      *Fleet
	node   string
	retain time.Duration
	clean  Cleaner
	said   map[string]bool // the tasks whose failure to clean was said
	last   time.Time       // the last sweep
}

// sweepEvery is how often a node looks for workspaces to clean at most:
// a retention is hours, a heartbeat seconds.
const sweepEvery = time.Minute

// sweep cleans every task toClean lists and records each cleaned, at most
// once per the retention or sweepEvery, whichever is shorter (tend calls
// it every heartbeat); one that cannot be cleaned (its workspace busy,
// say) is tried again at the next sweep, its failure said once.
func (c *cleaner) sweep(ctx context.Context, say func(string, ...any)) {
	if time.Since(c.last) < min(c.retain, sweepEvery) {
		return
	}
	c.last = time.Now()
	ts, err := c.f.toClean(ctx, c.node, c.retain)
	if err != nil {
		if ctx.Err() == nil {
			say("%v", err)
		}
		return
	}
	for _, t := range ts {
		if err := c.clean(ctx, t); err != nil {
			if !c.said[t.ID] && ctx.Err() == nil {
				c.said[t.ID] = true
				say("task %s: its workspace is kept past its retention, tried again later: %v", t.ID, err)
			}
			continue
		}
		if err := c.f.cleaned(ctx, t); err != nil {
			say("%v", err)
			continue
		}
		say("task %s: its workspace released, %s after it ended (--task-retention); its results stay in the fleet", t.ID, c.retain)
	}
}

// cleaned records that t's workspace is released and lives nowhere.
func (f *Fleet) cleaned(ctx context.Context, t *Task) error {
	_, err := f.pool.Exec(ctx, `WITH h AS (DELETE FROM fleet_homes WHERE workspace = $2)
		UPDATE fleet_tasks SET cleaned_at = now() WHERE id = $1`, t.ID, t.Workspace)
	if err != nil {
		return fmt.Errorf("fleet: task %s cleaned: %w", t.ID, err)
	}
	return nil
}
