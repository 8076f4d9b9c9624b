package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/tinehq/tine"
)

// The states of a node.
const (
	NodeUp      = "up"      // heartbeating
	NodeLost    = "lost"    // missed LostAfter heartbeats; its running tasks were marked lost
	NodeStopped = "stopped" // stopped by its own tine serve
)

// LostAfter is how many heartbeat periods a node may miss before another
// node declares it lost.
const LostAfter = 3

// NodeInfo is what a node registers about itself.
type NodeInfo struct {
	Name     string        `json:"name"`
	Address  string        `json:"address,omitempty"` // where its API answers (tine serve --listen), "" for none
	Capacity int           `json:"capacity"`          // tasks it runs at once; 0 for an API that takes none
	Backends []string      `json:"backends"`          // the file backends that work on it
	LiveFork []string      `json:"live_fork"`         // the live-fork engines it has (ptrace, criu)
	Beat     time.Duration `json:"-"`                 // its heartbeat period
}

// Node is a registered node as the fleet sees it.
type Node struct {
	NodeInfo
	BeatEveryMS int64     `json:"beat_every_ms"`
	State       string    `json:"state"`
	Reason      string    `json:"reason,omitempty"`
	StartedAt   time.Time `json:"started_at"`
	BeatAt      time.Time `json:"beat_at"`
	Running     int       `json:"running"` // its tasks in state running
}

// checkName refuses a node name that is empty or not a plain word.
func checkName(name string) error {
	if name == "" || len(name) > 63 {
		return fmt.Errorf("node name %q: 1 to 63 characters: %w", name, tine.ErrInvalid)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("node name %q: letters, digits, '-', '_' and '.' only: %w", name, tine.ErrInvalid)
		}
	}
	return nil
}

// Register records node n as up, replacing what an earlier incarnation of
// it registered. Tasks the fleet still has running on it belong to that
// earlier incarnation, which is gone: they are marked lost, never run
// again. It returns their ids.
func (f *Fleet) Register(ctx context.Context, n NodeInfo) (lost []string, err error) {
	if err := checkName(n.Name); err != nil {
		return nil, err
	}
	if n.Capacity < 0 {
		return nil, fmt.Errorf("node %s: capacity %d: 0 (an API that takes no tasks) or more: %w", n.Name, n.Capacity, tine.ErrInvalid)
	}
	err = pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO fleet_nodes (name, address, capacity, backends, live_fork, beat_every, state, started_at, beat_at)
			VALUES ($1, $2, $3, $4, $5, $6, 'up', now(), now())
			ON CONFLICT (name) DO UPDATE SET address = excluded.address, capacity = excluded.capacity,
				backends = excluded.backends, live_fork = excluded.live_fork, beat_every = excluded.beat_every,
				state = 'up', reason = '', started_at = now(), beat_at = now()`,
			n.Name, n.Address, n.Capacity, nonNil(n.Backends), nonNil(n.LiveFork), millis(n.Beat))
		if err != nil {
			return err
		}
		lost, err = loseTasks(ctx, tx, n.Name, fmt.Sprintf("node %s restarted while the task ran; its forks stay on %s", n.Name, n.Name))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: register node %s: %w", n.Name, err)
	}
	return lost, nil
}

// loseTasks marks node's running tasks lost with reason and returns them.
func loseTasks(ctx context.Context, tx pgx.Tx, node, reason string) ([]string, error) {
	rows, err := tx.Query(ctx, `UPDATE fleet_tasks SET state = 'lost', reason = $2, finished_at = now()
		WHERE node = $1 AND state = 'running' RETURNING id`, node, reason)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// Beat records a heartbeat of node name. A node another node declared
// lost is up again once it beats; the tasks that were marked lost stay
// so.
func (f *Fleet) Beat(ctx context.Context, name string) error {
	n, err := f.pool.Exec(ctx, "UPDATE fleet_nodes SET beat_at = now(), state = 'up', reason = '' WHERE name = $1", name)
	if err != nil {
		return fmt.Errorf("fleet: heartbeat of %s: %w", name, err)
	}
	if n.RowsAffected() == 0 {
		return fmt.Errorf("fleet: heartbeat of %s: node not registered: %w", name, tine.ErrNotFound)
	}
	return nil
}

// Stop records that node name stopped of its own accord.
func (f *Fleet) Stop(ctx context.Context, name string) error {
	_, err := f.pool.Exec(ctx, "UPDATE fleet_nodes SET state = 'stopped', reason = 'tine serve stopped' WHERE name = $1", name)
	return err
}

// Lost is a task Reap marked lost, and why.
type Lost struct {
	Task   string `json:"task"`
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// Reap declares lost every node up whose last heartbeat is more than
// LostAfter of its periods old (by the database's clock), and marks its
// running tasks lost with the reason: they are never run again, since
// their agents may have had effects. Their files stay on the node. Any
// node may reap; two reaping at once lose each task once.
func (f *Fleet) Reap(ctx context.Context) ([]Lost, error) {
	var out []Lost
	err := pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE fleet_nodes
			SET state = 'lost', reason = 'no heartbeat since ' || to_char(beat_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
			WHERE state = 'up' AND beat_at < now() - make_interval(secs => $1 * beat_every / 1000.0)
			RETURNING name, reason`, LostAfter)
		if err != nil {
			return err
		}
		type dead struct{ name, reason string }
		nodes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (d dead, err error) {
			return d, r.Scan(&d.name, &d.reason)
		})
		if err != nil {
			return err
		}
		for _, d := range nodes {
			reason := fmt.Sprintf("node %s stopped heartbeating (%s) while the task ran; not run again, since its agents may have had effects; its forks stay on %s", d.name, d.reason, d.name)
			ids, err := loseTasks(ctx, tx, d.name, reason)
			if err != nil {
				return err
			}
			for _, id := range ids {
				out = append(out, Lost{Task: id, Node: d.name, Reason: reason})
			}
		}
		return forgetAPINodes(ctx, tx)
	})
	if err != nil {
		return nil, fmt.Errorf("fleet: reap: %w", err)
	}
	return out, nil
}

// ForgetAPIAfter is how long a node that took no tasks (capacity 0: an
// API server, such as a tine-api pod, whose name goes with its pod) stays
// listed once it stopped or was lost.
const ForgetAPIAfter = time.Hour

// forgetAPINodes removes the nodes of capacity 0 that stopped or were
// lost more than ForgetAPIAfter ago and that nothing names: no task ran
// there, no workspace lives there. Each tine-api pod registers under its
// pod's name; without this, every pod a Deployment ever ran stayed in
// tine tasks.
func forgetAPINodes(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `DELETE FROM fleet_nodes n WHERE n.capacity = 0 AND n.state <> 'up'
		AND n.beat_at < now() - make_interval(secs => $1)
		AND NOT EXISTS (SELECT 1 FROM fleet_tasks t WHERE t.node = n.name)
		AND NOT EXISTS (SELECT 1 FROM fleet_homes h WHERE h.node = n.name)`, ForgetAPIAfter.Seconds())
	return err
}

// Nodes lists the registered nodes by name.
func (f *Fleet) Nodes(ctx context.Context) ([]Node, error) {
	rows, err := f.pool.Query(ctx, `SELECT n.name, n.address, n.capacity, n.backends, n.live_fork, n.beat_every,
			n.state, n.reason, n.started_at, n.beat_at,
			(SELECT count(*) FROM fleet_tasks t WHERE t.node = n.name AND t.state = 'running')
		FROM fleet_nodes n ORDER BY n.name`)
	if err != nil {
		return nil, fmt.Errorf("fleet: nodes: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (n Node, err error) {
		err = r.Scan(&n.Name, &n.Address, &n.Capacity, &n.Backends, &n.LiveFork, &n.BeatEveryMS,
			&n.State, &n.Reason, &n.StartedAt, &n.BeatAt, &n.Running)
		n.StartedAt, n.BeatAt = n.StartedAt.UTC(), n.BeatAt.UTC()
		return n, err
	})
}

// Node returns the node called name; tine.ErrNotFound when none is.
func (f *Fleet) Node(ctx context.Context, name string) (*Node, error) {
	nodes, err := f.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	for i := range nodes {
		if nodes[i].Name == name {
			return &nodes[i], nil
		}
	}
	return nil, fmt.Errorf("node %s: %w", name, tine.ErrNotFound)
}

// SetHome records that workspace ws lives on node.
func (f *Fleet) SetHome(ctx context.Context, ws, node string) error {
	_, err := f.pool.Exec(ctx, `INSERT INTO fleet_homes (workspace, node) VALUES ($1, $2)
		ON CONFLICT (workspace) DO UPDATE SET node = excluded.node`, ws, node)
	if err != nil {
		return fmt.Errorf("fleet: home of %s: %w", ws, err)
	}
	return nil
}

// ClaimHome records that workspace ws lives on node unless a home is on
// record already, and returns the home on record after: node, or the node
// that claimed it first.
func (f *Fleet) ClaimHome(ctx context.Context, ws, node string) (string, error) {
	var home string
	err := f.pool.QueryRow(ctx, `WITH claimed AS (
			INSERT INTO fleet_homes (workspace, node) VALUES ($1, $2)
			ON CONFLICT (workspace) DO NOTHING RETURNING node)
		SELECT node FROM claimed UNION ALL SELECT node FROM fleet_homes WHERE workspace = $1
		LIMIT 1`, ws, node).Scan(&home)
	if errors.Is(err, pgx.ErrNoRows) { // claimed at the same moment: not in this statement's snapshot
		return f.Home(ctx, ws)
	}
	if err != nil {
		return "", fmt.Errorf("fleet: home of %s: %w", ws, err)
	}
	return home, nil
}

// Home returns the node workspace ws lives on, "" when it has none (made
// by a tine that is not a node).
func (f *Fleet) Home(ctx context.Context, ws string) (string, error) {
	var node string
	err := f.pool.QueryRow(ctx, "SELECT node FROM fleet_homes WHERE workspace = $1", ws).Scan(&node)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("fleet: home of %s: %w", ws, err)
	}
	return node, nil
}

// nonNil returns s, or an empty slice for nil (a NOT NULL array column).
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
