package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/tinehq/tine/store/sqltx"
)

// migrations are the schema changes in order: migrations[i] takes the
// database from schema version i to i+1. They are package sqlite's
// migrations translated step for step, so that a schema version means the
// same tables in either store: times are Unix nanoseconds in UTC, empty
// strings stand for absent references, JSON columns keep the text they
// were given (json, not jsonb), lists are arrays, and each table that is
// listed in creation order has an ord column standing for SQLite's rowid,
// which breaks ties in insertion order. Constraints are named, so that an
// error can say which one a write broke. Append only; never edit one that
// has shipped.
var migrations = []string{
	// 1: the initial schema.
	`
CREATE TABLE workspaces (
	id         TEXT NOT NULL CONSTRAINT workspaces_id PRIMARY KEY,
	name       TEXT NOT NULL CONSTRAINT workspaces_name UNIQUE,
	path       TEXT NOT NULL CONSTRAINT workspaces_path UNIQUE,
	backend    TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	ord        BIGINT GENERATED ALWAYS AS IDENTITY
);

CREATE TABLE runs (
	id         TEXT NOT NULL CONSTRAINT runs_id PRIMARY KEY,
	workspace  TEXT NOT NULL CONSTRAINT runs_workspace REFERENCES workspaces (id),
	name       TEXT NOT NULL,
	parent     TEXT NOT NULL,
	role       TEXT NOT NULL,
	state      TEXT NOT NULL,
	base       TEXT NOT NULL,
	origin     TEXT NOT NULL,
	grp        TEXT NOT NULL,
	approach   TEXT NOT NULL,
	git_head   TEXT NOT NULL,
	resolution TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	updated_at BIGINT NOT NULL,
	ord        BIGINT GENERATED ALWAYS AS IDENTITY,
	CONSTRAINT runs_name UNIQUE (workspace, name)
);
CREATE INDEX runs_by_workspace ON runs (workspace, created_at, ord);
CREATE INDEX runs_by_parent ON runs (parent) WHERE parent <> '';
CREATE INDEX runs_by_grp ON runs (grp) WHERE grp <> '';
CREATE INDEX runs_by_state ON runs (state);

CREATE TABLE versions (
	id         TEXT NOT NULL CONSTRAINT versions_id PRIMARY KEY,
	workspace  TEXT NOT NULL CONSTRAINT versions_workspace REFERENCES workspaces (id),
	parent     TEXT NOT NULL,
	run        TEXT NOT NULL,
	kind       TEXT NOT NULL,
	label      TEXT NOT NULL,
	layers     TEXT[] NOT NULL CHECK (array_position(layers, NULL) IS NULL),
	created_at BIGINT NOT NULL,
	ord        BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX versions_by_workspace ON versions (workspace, created_at, ord);

CREATE TABLE layers (
	id         TEXT NOT NULL CONSTRAINT layers_id PRIMARY KEY,
	workspace  TEXT NOT NULL CONSTRAINT layers_workspace REFERENCES workspaces (id),
	bytes      BIGINT NOT NULL,
	created_at BIGINT NOT NULL,
	ord        BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX layers_by_workspace ON layers (workspace, created_at, ord);

CREATE TABLE groups (
	id         TEXT NOT NULL CONSTRAINT groups_id PRIMARY KEY,
	workspace  TEXT NOT NULL CONSTRAINT groups_workspace REFERENCES workspaces (id),
	parent     TEXT NOT NULL,
	version    TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	ord        BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX groups_by_workspace ON groups (workspace, created_at, ord);

-- The event log is append-only; only DeleteWorkspace removes entries. An
-- identity never hands out a number twice, so readers can page with
-- After; writers are serialized (see Store.Update), so sequence order is
-- commit order. workspace has no foreign key: an event may belong to no
-- workspace.
CREATE TABLE events (
	seq       BIGINT GENERATED ALWAYS AS IDENTITY CONSTRAINT events_seq PRIMARY KEY,
	time      BIGINT NOT NULL,
	workspace TEXT NOT NULL,
	run       TEXT NOT NULL,
	kind      TEXT NOT NULL,
	detail    JSON
);
CREATE INDEX events_by_workspace ON events (workspace, seq);
CREATE INDEX events_by_run ON events (run, seq) WHERE run <> '';
`,
	// 2: live state: a run's recorded process state and network address,
	// and a workspace's network isolation.
	`
ALTER TABLE runs ADD COLUMN proc TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN addr TEXT NOT NULL DEFAULT '';
ALTER TABLE workspaces ADD COLUMN net BOOLEAN NOT NULL DEFAULT false;
`,
	// 3: control from inside a run: each run's capability, the nonces its
	// requests used, and approvals. They cascade with their run or
	// workspace, so DeleteWorkspace and DeleteRun take them along.
	`
CREATE TABLE capabilities (
	run        TEXT NOT NULL CONSTRAINT capabilities_run PRIMARY KEY
		CONSTRAINT capabilities_of_run REFERENCES runs (id) ON DELETE CASCADE,
	secret     BYTEA NOT NULL,
	generation INTEGER NOT NULL,
	issued_at  BIGINT NOT NULL,
	revoked    BOOLEAN NOT NULL
);

-- A nonce is kept until its request could no longer pass the time window.
CREATE TABLE nonces (
	run        TEXT NOT NULL CONSTRAINT nonces_of_run REFERENCES runs (id) ON DELETE CASCADE,
	nonce      TEXT NOT NULL,
	expires_at BIGINT NOT NULL,
	CONSTRAINT nonces_run_nonce PRIMARY KEY (run, nonce)
);
CREATE INDEX nonces_by_expires_at ON nonces (expires_at);

-- decided_at is 0 until a person decides.
CREATE TABLE approvals (
	id           TEXT NOT NULL CONSTRAINT approvals_id PRIMARY KEY,
	workspace    TEXT NOT NULL CONSTRAINT approvals_workspace REFERENCES workspaces (id) ON DELETE CASCADE,
	run          TEXT NOT NULL,
	grp          TEXT NOT NULL,
	action       TEXT NOT NULL,
	args         JSON,
	evidence     JSON,
	state        TEXT NOT NULL,
	fingerprint  TEXT NOT NULL,
	requested_by TEXT NOT NULL,
	created_at   BIGINT NOT NULL,
	expires_at   BIGINT NOT NULL,
	decided_at   BIGINT NOT NULL,
	decided_by   TEXT NOT NULL,
	ord          BIGINT GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX approvals_by_workspace ON approvals (workspace, created_at, ord);
CREATE INDEX approvals_by_state ON approvals (state, created_at, ord);
`,
	// 4: the store's identity, a random id and its creation time (Unix
	// nanoseconds), so the engine can tell the workspaces made with this
	// store from a store that is not theirs.
	`
CREATE TABLE meta (
	key   TEXT NOT NULL CONSTRAINT meta_key PRIMARY KEY,
	value TEXT NOT NULL
);
INSERT INTO meta (key, value) VALUES
	('id', 's' || left(md5(gen_random_uuid()::text), 24)),
	('created_at', ((extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000)::text);
`,
	// 5: every workspace's owner (uid, gid) and the groups granted access.
	// (SQLite's store gives the workspaces made before this the owner of
	// its directory; no PostgreSQL store predates it.)
	`
ALTER TABLE workspaces ADD COLUMN uid INTEGER NOT NULL DEFAULT -1;
ALTER TABLE workspaces ADD COLUMN gid INTEGER NOT NULL DEFAULT -1;
ALTER TABLE workspaces ADD COLUMN grant_gids INTEGER[] NOT NULL DEFAULT '{}';
`,
	// 6: a workspace's runs by state, so its live runs are read without
	// its history.
	`
CREATE INDEX runs_by_workspace_state ON runs (workspace, state, created_at, ord);
`,
}

// SchemaVersion is the schema version this package writes.
func SchemaVersion() int { return len(migrations) }

// schema returns PostgreSQL's schema: the version is the one row of the
// table schema_version, made by the first step.
func schema() *sqltx.Schema {
	return &sqltx.Schema{
		Migrations: migrations,
		Version: func(ctx context.Context, db sqltx.DB) (v int, err error) {
			if _, err := db.Exec(ctx, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"); err != nil {
				return 0, err
			}
			err = db.QueryRow(ctx, "SELECT version FROM schema_version").Scan(&v)
			if errors.Is(err, pgx.ErrNoRows) {
				_, err = db.Exec(ctx, "INSERT INTO schema_version (version) VALUES (0)")
			}
			return v, err
		},
		SetVersion: func(ctx context.Context, db sqltx.DB, v int) error {
			_, err := db.Exec(ctx, "UPDATE schema_version SET version = ?", v)
			return err
		},
	}
}

// migrate applies the migrations the database lacks, each in its own
// transaction under the store's writer lock, so that several processes
// opening one database at once apply each step once.
func (s *Store) migrate(ctx context.Context) error {
	return schema().Migrate(ctx, func(fn func(sqltx.DB) error) error {
		return s.write(ctx, func(tx pgx.Tx) error { return fn(conn{tx}) })
	})
}
