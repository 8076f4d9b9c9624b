package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"syscall"

	"github.com/tinehq/tine/store/sqltx"
)

// migrations are the schema changes in order: migrations[i] takes the
// database from PRAGMA user_version i to i+1 (see sqltx.Schema). Append
// only; never edit one that has shipped.
var migrations = []string{
	// 1: the initial schema. Times are Unix nanoseconds in UTC; empty
	// strings, not NULLs, stand for absent references.
	`
CREATE TABLE workspaces (
	id         TEXT PRIMARY KEY,
	name       TEXT NOT NULL UNIQUE,
	path       TEXT NOT NULL UNIQUE,
	backend    TEXT NOT NULL,
	created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE runs (
	id         TEXT PRIMARY KEY,
	workspace  TEXT NOT NULL REFERENCES workspaces (id),
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
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	UNIQUE (workspace, name)
) STRICT;
CREATE INDEX runs_workspace ON runs (workspace, created_at);
CREATE INDEX runs_parent ON runs (parent) WHERE parent <> '';
CREATE INDEX runs_grp ON runs (grp) WHERE grp <> '';
CREATE INDEX runs_state ON runs (state);

CREATE TABLE versions (
	id         TEXT PRIMARY KEY,
	workspace  TEXT NOT NULL REFERENCES workspaces (id),
	parent     TEXT NOT NULL,
	run        TEXT NOT NULL,
	kind       TEXT NOT NULL,
	label      TEXT NOT NULL,
	layers     TEXT NOT NULL CHECK (json_valid(layers) AND json_type(layers) = 'array'),
	created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX versions_workspace ON versions (workspace, created_at);

CREATE TABLE layers (
	id         TEXT PRIMARY KEY,
	workspace  TEXT NOT NULL REFERENCES workspaces (id),
	bytes      INTEGER NOT NULL,
	created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX layers_workspace ON layers (workspace, created_at);

CREATE TABLE groups (
	id         TEXT PRIMARY KEY,
	workspace  TEXT NOT NULL REFERENCES workspaces (id),
	parent     TEXT NOT NULL,
	version    TEXT NOT NULL,
	created_at INTEGER NOT NULL
) STRICT;
CREATE INDEX groups_workspace ON groups (workspace, created_at);

-- The event log is append-only; only DeleteWorkspace removes entries.
-- AUTOINCREMENT keeps a sequence number from ever being reused, so readers
-- can page with After. workspace has no foreign key: an event may belong to
-- no workspace.
CREATE TABLE events (
	seq       INTEGER PRIMARY KEY AUTOINCREMENT,
	time      INTEGER NOT NULL,
	workspace TEXT NOT NULL,
	run       TEXT NOT NULL,
	kind      TEXT NOT NULL,
	detail    TEXT CHECK (detail IS NULL OR json_valid(detail))
) STRICT;
CREATE INDEX events_workspace ON events (workspace, seq);
CREATE INDEX events_run ON events (run, seq) WHERE run <> '';
`,
	// 2: live state: a run's recorded process state and network address,
	// and a workspace's network isolation.
	`
ALTER TABLE runs ADD COLUMN proc TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN addr TEXT NOT NULL DEFAULT '';
ALTER TABLE workspaces ADD COLUMN net INTEGER NOT NULL DEFAULT 0;
`,
	// 3: control from inside a run: each run's capability, the nonces its
	// requests used, and approvals. They cascade with their run or
	// workspace, so DeleteWorkspace and DeleteRun take them along.
	`
CREATE TABLE capabilities (
	run        TEXT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
	secret     BLOB NOT NULL,
	generation INTEGER NOT NULL,
	issued_at  INTEGER NOT NULL,
	revoked    INTEGER NOT NULL
) STRICT;

-- A nonce is kept until its request could no longer pass the time window.
CREATE TABLE nonces (
	run        TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	nonce      TEXT NOT NULL,
	expires_at INTEGER NOT NULL,
	PRIMARY KEY (run, nonce)
) STRICT;
CREATE INDEX nonces_expires_at ON nonces (expires_at);

-- decided_at is 0 until a person decides.
CREATE TABLE approvals (
	id           TEXT PRIMARY KEY,
	workspace    TEXT NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
	run          TEXT NOT NULL,
	grp          TEXT NOT NULL,
	action       TEXT NOT NULL,
	args         TEXT CHECK (args IS NULL OR json_valid(args)),
	evidence     TEXT CHECK (evidence IS NULL OR json_valid(evidence)),
	state        TEXT NOT NULL,
	fingerprint  TEXT NOT NULL,
	requested_by TEXT NOT NULL,
	created_at   INTEGER NOT NULL,
	expires_at   INTEGER NOT NULL,
	decided_at   INTEGER NOT NULL,
	decided_by   TEXT NOT NULL
) STRICT;
CREATE INDEX approvals_workspace ON approvals (workspace, created_at);
CREATE INDEX approvals_state ON approvals (state, created_at);
`,
	// 4: the store's identity, a random id and its creation time (Unix
	// nanoseconds), so the engine can tell the workspaces made with this
	// store from a store that is not theirs.
	`
CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
) STRICT;
INSERT INTO meta (key, value) VALUES
	('id', 's' || lower(hex(randomblob(12)))),
	('created_at', CAST(CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) * 1000000 AS TEXT));
`,
	// 5: every workspace's owner (uid, gid) and the groups granted access
	// (a JSON array of gids). Workspaces made before have uid -1 until
	// adoptOwners gives them the owner of the store's directory.
	`
ALTER TABLE workspaces ADD COLUMN uid INTEGER NOT NULL DEFAULT -1;
ALTER TABLE workspaces ADD COLUMN gid INTEGER NOT NULL DEFAULT -1;
ALTER TABLE workspaces ADD COLUMN grant_gids TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(grant_gids) AND json_type(grant_gids) = 'array');
`,
	// 6: a workspace's runs by state, so its live runs are read without
	// its history (runs_workspace made tine ls read every run the
	// workspace ever had: 1.5x slower at 10,000 than at 10).
	`
CREATE INDEX runs_workspace_state ON runs (workspace, state, created_at);
`,
}

// adoptOwners gives every workspace recorded before owners were (uid -1)
// the owner of the directory holding the store: root for /var/lib/tine, the
// user for their own state directory.
func adoptOwners(ctx context.Context, db *sql.DB, dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	uid, gid := 0, 0
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		uid, gid = int(st.Uid), int(st.Gid)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM workspaces WHERE uid < 0").Scan(&n); err != nil || n == 0 {
		return err
	}
	_, err = db.ExecContext(ctx, "UPDATE workspaces SET uid = ?, gid = ? WHERE uid < 0", uid, gid)
	return err
}

// SchemaVersion is the schema version this package writes.
func SchemaVersion() int { return len(migrations) }

// schema returns SQLite's schema: the version is PRAGMA user_version.
func schema() *sqltx.Schema {
	return &sqltx.Schema{
		Migrations: migrations,
		Version: func(ctx context.Context, db sqltx.DB) (v int, err error) {
			err = db.QueryRow(ctx, "PRAGMA user_version").Scan(&v)
			return v, err
		},
		SetVersion: func(ctx context.Context, db sqltx.DB, v int) error {
			_, err := db.Exec(ctx, fmt.Sprintf("PRAGMA user_version = %d", v))
			return err
		},
	}
}

// migrate applies the migrations db lacks, each in its own transaction
// begun by BEGIN IMMEDIATE (the write pool's _txlock): several processes
// may migrate at once, and each step rereads the version after taking the
// write lock, so a step is never applied twice.
func migrate(ctx context.Context, db *sql.DB) error {
	return schema().Migrate(ctx, func(fn func(sqltx.DB) error) error { return do(ctx, db, nil, fn) })
}
