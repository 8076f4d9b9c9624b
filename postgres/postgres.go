package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/store/sqltx"
)

// LockTimeout is how long a transaction waits for a lock, the writer lock
// of Update above all, before failing with tine.ErrBusy: SQLite's busy
// timeout, for the same waits. A URL that sets lock_timeout keeps its own.
const LockTimeout = 10 * time.Second

// lockClass is the first key of the store's writer lock (an advisory lock,
// "tine" in ASCII); the second is a hash of the schema, so stores in two
// schemas of one database do not wait for each other.
const lockClass = 0x74696e65

// Store is a tine.Store backed by a PostgreSQL database (its tables in the
// first schema of the URL's search_path, public by default). A Store is
// safe for concurrent use, and any number of processes, on any number of
// machines, may use one database at once.
//
// The transactions keep SQLite's semantics, on which tine relies: Update
// takes the store's writer lock (a transaction-scoped advisory lock)
// before anything else, so read-write transactions run one at a time
// across every process, as SQLite's BEGIN IMMEDIATE makes them, and a
// read-modify-write in fn never races another; event sequence numbers are
// therefore handed out in commit order, and a reader paging with
// EventFilter.After never skips an event committed late. View runs in a
// read-only REPEATABLE READ transaction: one consistent snapshot. One
// difference remains: after a write fails on a constraint (ErrExists, or a
// missing workspace or run), PostgreSQL has aborted the transaction, and fn
// must return the error.
type Store struct {
	pool    *pgxpool.Pool
	where   string // the URL without its password, for messages
	now     func() time.Time
	begin   string // the statement that begins an Update: see write
	channel string // the LISTEN/NOTIFY channel of appended events, unquoted
	dialect *sqltx.Dialect
}

var _ tine.Store = (*Store)(nil)

// Open connects to the database at url ("postgres://user@host/db?…", or
// anything else pgx's ParseConfig takes) and brings its schema up to
// date. It fails wrapping tine.ErrInvalid for a URL it cannot parse and
// tine.ErrUnsupported if the database was written by a newer tine with a
// schema this one does not know.
func Open(url string) (*Store, error) {
	return OpenContext(context.Background(), url)
}

// OpenContext is Open with a context bounding the connection and the
// migrations.
func OpenContext(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w: %w", tine.ErrInvalid, err)
	}
	rp := cfg.ConnConfig.RuntimeParams
	if _, ok := rp["lock_timeout"]; !ok {
		rp["lock_timeout"] = fmt.Sprint(LockTimeout.Milliseconds())
	}
	if _, ok := rp["application_name"]; !ok {
		rp["application_name"] = "tine"
	}
	s := &Store{where: Redact(url), now: func() time.Time { return time.Now().UTC() }}
	if s.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, fmt.Errorf("postgres: open %s: %w", s.where, err)
	}
	if err := s.init(ctx); err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("postgres: open %s: %w", s.where, oneLine{err})
	}
	return s, nil
}

// init finds the schema the store's tables are in, and from it the writer
// lock and the event channel, then migrates.
func (s *Store) init(ctx context.Context) error {
	var schema *string
	var hash int32
	err := s.pool.QueryRow(ctx, "SELECT current_schema(), coalesce(hashtext(current_schema()), 0)").Scan(&schema, &hash)
	if err != nil {
		return wrapBusy(err)
	}
	if schema == nil {
		return fmt.Errorf("the search_path names no schema that exists; create it first: %w", tine.ErrInvalid)
	}
	s.begin = fmt.Sprintf("BEGIN; SELECT pg_advisory_xact_lock(%d, %d)", lockClass, hash)
	s.channel = "tine_events." + *schema
	if len(s.channel) > 63 { // PostgreSQL's longest name
		s.channel = fmt.Sprintf("tine_events.%x", uint32(hash))
	}
	s.dialect = newDialect(s.channel)
	return s.migrate(ctx)
}

// ID returns the store's identity: a random id chosen when the schema was
// created, and when that was. The engine writes the id beside the
// workspaces it makes, so a store that is not theirs is recognised.
func (s *Store) ID(ctx context.Context) (id string, created time.Time, err error) {
	var ns int64
	err = s.pool.QueryRow(ctx, `SELECT
		(SELECT value FROM meta WHERE key = 'id'),
		(SELECT value::bigint FROM meta WHERE key = 'created_at')`).Scan(&id, &ns)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("postgres: store id: %w", wrapBusy(err))
	}
	return id, time.Unix(0, ns).UTC(), nil
}

// SetID replaces the store's identity with id and created, for a store
// rebuilt from a state directory's manifests.
func (s *Store) SetID(ctx context.Context, id string, created time.Time) error {
	if id == "" {
		return fmt.Errorf("postgres: set store id: empty id: %w", tine.ErrInvalid)
	}
	err := s.write(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO meta (key, value) VALUES ('id', $1), ('created_at', $2)
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, id, fmt.Sprint(created.UnixNano()))
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: set store id: %w", wrapBusy(err))
	}
	return nil
}

// Check confirms the server answers and the schema is the one this tine
// writes. PostgreSQL keeps its own files sound (its write-ahead log, page
// checksums where the cluster has them); a store whose schema is not
// whole wraps tine.ErrStore.
func (s *Store) Check(ctx context.Context) error {
	var v int
	err := s.pool.QueryRow(ctx, "SELECT version FROM schema_version").Scan(&v)
	if err != nil {
		return fmt.Errorf("postgres: check: %w", wrapBusy(err))
	}
	if v != len(migrations) {
		return fmt.Errorf("postgres: check: schema version %d, want %d: %w", v, len(migrations), tine.ErrStore)
	}
	return nil
}

// Where returns the store's URL without its password.
func (s *Store) Where() string { return s.where }

// Close closes the connection pool.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}

// View runs fn in a read-only transaction: it sees one consistent snapshot
// and any write it attempts fails.
func (s *Store) View(ctx context.Context, fn func(tine.Tx) error) error {
	opts := pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}
	return s.do(ctx, opts, func(ptx pgx.Tx) error {
		return fn(sqltx.New(ctx, conn{ptx}, s.dialect, s.now))
	})
}

// Update runs fn in a read-write transaction, committed when fn returns nil
// and rolled back when it returns an error or panics. Updates are
// serialized, across processes too; fn must not call Update on the same
// Store. Waiting longer than LockTimeout for another writer fails wrapping
// tine.ErrBusy.
func (s *Store) Update(ctx context.Context, fn func(tine.Tx) error) error {
	return s.write(ctx, func(ptx pgx.Tx) error {
		return fn(sqltx.New(ctx, conn{ptx}, s.dialect, s.now))
	})
}

// write runs fn in a read-committed transaction that first takes the
// store's writer lock. The lock is taken by the statement that begins the
// transaction, in the same round trip; it is released at commit or
// rollback.
func (s *Store) write(ctx context.Context, fn func(pgx.Tx) error) error {
	return s.do(ctx, pgx.TxOptions{BeginQuery: s.begin}, fn)
}

// do runs fn in a transaction begun with opts. The deferred rollback also
// runs when fn panics, before the panic goes on up the stack.
func (s *Store) do(ctx context.Context, opts pgx.TxOptions, fn func(pgx.Tx) error) error {
	ptx, err := s.pool.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("postgres: begin: %w", wrapBusy(err))
	}
	defer func() { _ = ptx.Rollback(context.WithoutCancel(ctx)) }() // no-op once committed
	if err := fn(ptx); err != nil {
		return err
	}
	if err := ptx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: commit: %w", wrapBusy(err))
	}
	return nil
}
