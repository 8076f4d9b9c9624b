package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/postgres"
)

// lockClass is the first key of the advisory lock under which the fleet's
// tables and River's are migrated ("tinf" in ASCII; the store's writer
// lock is "tine"); the second is a hash of the schema.
const lockClass = 0x74696e66

// Fleet is the fleet's share of a PostgreSQL database: its nodes, its
// tasks and the queue (River's tables) that hands the tasks out. The
// tables live beside the store's, in the first schema of the URL's
// search_path. A Fleet is safe for concurrent use.
type Fleet struct {
	pool   *pgxpool.Pool
	where  string
	river  *river.Client[pgx.Tx] // inserts only; a Node has its own that works
	logger *slog.Logger
}

// Open connects to the database at url and brings the fleet's tables and
// River's up to date. It fails wrapping tine.ErrInvalid for a URL that is
// not PostgreSQL's.
func Open(ctx context.Context, url string) (*Fleet, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("fleet: %w: %w", tine.ErrInvalid, err)
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "tine-fleet"
	}
	f := &Fleet{where: postgres.Redact(url), logger: slog.New(slog.DiscardHandler)}
	if f.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, fmt.Errorf("fleet: open %s: %w", f.where, err)
	}
	if err := f.migrate(ctx); err != nil {
		f.pool.Close()
		return nil, fmt.Errorf("fleet: open %s: %w", f.where, err)
	}
	if f.river, err = river.NewClient(riverpgxv5.New(f.pool), &river.Config{Logger: f.logger}); err != nil {
		f.pool.Close()
		return nil, fmt.Errorf("fleet: %w", err)
	}
	return f, nil
}

// Close closes the connection pool.
func (f *Fleet) Close() { f.pool.Close() }

// Where returns the database's URL without its password.
func (f *Fleet) Where() string { return f.where }

// migrate applies, under the fleet's advisory lock (held by a connection
// of its own), River's migrations, each in a transaction of its own as
// River needs, and then the fleet's, so that nodes starting at once apply
// each once.
func (f *Fleet) migrate(ctx context.Context) error {
	c, err := f.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	lock := "SELECT pg_advisory_lock($1, coalesce(hashtext(current_schema()), 0))"
	if _, err := c.Exec(ctx, lock, lockClass); err != nil {
		return err
	}
	defer func() {
		unlock := "SELECT pg_advisory_unlock($1, coalesce(hashtext(current_schema()), 0))"
		if _, err := c.Exec(context.WithoutCancel(ctx), unlock, lockClass); err != nil {
			_ = c.Conn().Close(context.WithoutCancel(ctx)) // closing releases it
		}
	}()
	m, err := rivermigrate.New(riverpgxv5.New(f.pool), &rivermigrate.Config{Logger: f.logger})
	if err != nil {
		return err
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river's tables: %w", err)
	}
	return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error { return migrateFleet(ctx, tx) })
}

// migrations are the fleet's schema changes in order; append only. Times
// are the database's (timestamptz, now()): nodes on several machines are
// judged by one clock.
var migrations = []string{
	`
CREATE TABLE fleet_nodes (
	name       TEXT NOT NULL PRIMARY KEY,
	address    TEXT NOT NULL,
	capacity   INTEGER NOT NULL,
	backends   TEXT[] NOT NULL,
	live_fork  TEXT[] NOT NULL,
	beat_every BIGINT NOT NULL, -- milliseconds
	state      TEXT NOT NULL,
	reason     TEXT NOT NULL DEFAULT '',
	started_at TIMESTAMPTZ NOT NULL,
	beat_at    TIMESTAMPTZ NOT NULL
);

CREATE TABLE fleet_tasks (
	id           TEXT NOT NULL PRIMARY KEY,
	key          TEXT NOT NULL UNIQUE,
	repo         TEXT NOT NULL,
	commit       TEXT NOT NULL,
	request      JSON NOT NULL,
	submitted_by TEXT NOT NULL,
	state        TEXT NOT NULL,
	reason       TEXT NOT NULL DEFAULT '',
	node         TEXT NOT NULL DEFAULT '',
	workspace    TEXT NOT NULL DEFAULT '',
	outcome      TEXT NOT NULL DEFAULT '',
	winner       TEXT NOT NULL DEFAULT '',
	report       JSON,
	patch        BYTEA,
	commits      TEXT[] NOT NULL DEFAULT '{}',
	submitted_at TIMESTAMPTZ NOT NULL DEFAULT now(),
	started_at   TIMESTAMPTZ,
	finished_at  TIMESTAMPTZ,
	ord          BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX fleet_tasks_by_node ON fleet_tasks (node, state);

-- Each workspace a node made lives on it: its layers, its runs' views.
CREATE TABLE fleet_homes (
	workspace TEXT NOT NULL PRIMARY KEY,
	node      TEXT NOT NULL
);
`,
	`
-- A batch is the tasks submitted together; its spend is what its tasks
-- spent, charged by their nodes as they go, against its cap (0: none).
CREATE TABLE fleet_batches (
	id         TEXT NOT NULL PRIMARY KEY,
	key        TEXT NOT NULL UNIQUE,
	cap_usd    DOUBLE PRECISION NOT NULL DEFAULT 0,
	spent_usd  DOUBLE PRECISION NOT NULL DEFAULT 0,
	created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
ALTER TABLE fleet_tasks ADD COLUMN batch TEXT NOT NULL DEFAULT '',
	ADD COLUMN cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0;
`,
	`
-- The winner's commits as a git bundle (its commit..head), so tine fetch
-- replays them; who submitted the task (uid -1: not known), so each user
-- sees their own.
ALTER TABLE fleet_tasks ADD COLUMN bundle BYTEA,
	ADD COLUMN head TEXT NOT NULL DEFAULT '',
	ADD COLUMN owner_uid INTEGER NOT NULL DEFAULT -1,
	ADD COLUMN owner TEXT NOT NULL DEFAULT '';
`,
	`
-- A request to stop a running task (Withdraw), saying who asked: its node
-- stops the task's forks and records it canceled.
ALTER TABLE fleet_tasks ADD COLUMN cancel TEXT NOT NULL DEFAULT '';
`,
	`
-- When its node released the task's workspace and removed its clone, past
-- the node's retention (tine serve --task-retention); its results stay.
ALTER TABLE fleet_tasks ADD COLUMN cleaned_at TIMESTAMPTZ;
`,
}

// migrateFleet applies the fleet's migrations tx's database lacks; the
// caller holds the fleet's lock.
func migrateFleet(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, "CREATE TABLE IF NOT EXISTS fleet_schema (version INTEGER NOT NULL)"); err != nil {
		return err
	}
	var v int
	err := tx.QueryRow(ctx, "SELECT version FROM fleet_schema").Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		_, err = tx.Exec(ctx, "INSERT INTO fleet_schema (version) VALUES (0)")
	}
	if err != nil {
		return err
	}
	if v > len(migrations) {
		return fmt.Errorf("the fleet's tables are at version %d, newer than this tine's %d: %w", v, len(migrations), tine.ErrUnsupported)
	}
	for ; v < len(migrations); v++ {
		if _, err := tx.Exec(ctx, migrations[v]); err != nil {
			return fmt.Errorf("fleet schema %d: %w", v+1, err)
		}
	}
	_, err = tx.Exec(ctx, "UPDATE fleet_schema SET version = $1", v)
	return err
}

// millis is d in whole milliseconds.
func millis(d time.Duration) int64 { return d.Milliseconds() }
