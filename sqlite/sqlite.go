package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/store/sqltx"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// BusyTimeout is how long a connection waits for another connection, in this
// process or another, to release a lock before failing with tine.ErrBusy.
const BusyTimeout = 10 * time.Second

// Store is a tine.Store backed by one SQLite database file. It keeps two
// connection pools: one connection for writers, whose transactions begin
// with BEGIN IMMEDIATE so that writers in several processes queue on the
// busy timeout instead of failing on a lock upgrade, and a read-only pool
// for View. A Store is safe for concurrent use.
type Store struct {
	write *sql.DB
	read  *sql.DB
	now   func() time.Time
}

var _ tine.Store = (*Store)(nil)

// Open opens the database at path, creating it if needed, and brings its
// schema up to date. It fails, wrapping tine.ErrUnsupported, if the database
// was written by a newer tine with a schema this one does not know, and
// wrapping tine.ErrStore if the file is not a database or is damaged.
//
// Every commit is durable when Update returns: the store runs in WAL mode
// with synchronous=FULL, so the log is synced at each commit and a power
// cut afterwards cannot take the commit back. Callers delete files only
// after the commit that says they are garbage.
func Open(path string) (*Store, error) {
	return openWith(path, syncFull)
}

// The synchronous settings openWith knows. FULL is what Open uses; NORMAL
// (sync only at checkpoints, so a power cut may lose the last commits) is
// kept for the benchmark that measures what FULL costs.
const (
	syncFull   = "FULL"
	syncNormal = "NORMAL"
)

func openWith(path, synchronous string) (*Store, error) {
	s := &Store{now: func() time.Time { return time.Now().UTC() }}
	if err := private(path); err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			err = fmt.Errorf("the disk holding %s is full: %w", filepath.Dir(path), err)
		}
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	var err error
	if s.write, err = openDB(path, synchronous, "_txlock=immediate"); err != nil {
		return nil, err
	}
	s.write.SetMaxOpenConns(1)
	if err := migrate(context.Background(), s.write); err != nil {
		s.write.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, wrapFull(wrapDamage(err), filepath.Dir(path)))
	}
	if err := adoptOwners(context.Background(), s.write, filepath.Dir(path)); err != nil {
		s.write.Close()
		return nil, fmt.Errorf("sqlite: open %s: recording workspaces' owners: %w", path, wrapBusy(err))
	}
	if s.read, err = openDB(path, synchronous, "_pragma=query_only(1)"); err != nil {
		s.write.Close()
		return nil, err
	}
	return s, nil
}

// private makes the database at path, and the log and shared memory files
// beside it, readable by their owner alone: the store holds every run's
// capability secret. SQLite gives the files it creates the database's
// mode, so a database made here first, 0600, keeps them all so; one made
// before with a wider mode is narrowed.
func private(path string) error {
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	f.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		err := os.Chmod(p, 0o600)
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
			return err // another's store stays as it is: they narrow it at their next open
		}
	}
	return nil
}

// openDB opens a connection pool on path. Every connection the pool makes
// runs the pragmas in the DSN, so each has the busy timeout and foreign keys.
func openDB(path, synchronous, extra string) (*sql.DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	dsn := "file:" + (&url.URL{Path: abs}).EscapedPath() + "?" +
		fmt.Sprintf("_pragma=busy_timeout(%d)", BusyTimeout.Milliseconds()) +
		"&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(" + synchronous + ")&" + extra
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if err := db.Ping(); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, wrapFull(wrapDamage(wrapBusy(err)), filepath.Dir(abs)))
	}
	return db, nil
}

// ID returns the store's identity: a random id chosen when the database was
// created (or first opened by a tine that records one), and when that was.
// The engine writes the id beside the workspaces it makes, so a store that
// is not theirs (a fresh one, another machine's) is recognised.
func (s *Store) ID(ctx context.Context) (id string, created time.Time, err error) {
	var ns int64
	err = s.read.QueryRowContext(ctx, `SELECT
		(SELECT value FROM meta WHERE key = 'id'),
		(SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'created_at')`).Scan(&id, &ns)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("sqlite: store id: %w", wrapDamage(wrapBusy(err)))
	}
	return id, time.Unix(0, ns).UTC(), nil
}

// SetID replaces the store's identity with id and created, for a store
// rebuilt from a state directory's manifests, which must keep the id its
// workspace directories were made with.
func (s *Store) SetID(ctx context.Context, id string, created time.Time) error {
	if id == "" {
		return fmt.Errorf("sqlite: set store id: empty id: %w", tine.ErrInvalid)
	}
	_, err := s.write.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES ('id', ?), ('created_at', ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, id, fmt.Sprint(created.UnixNano()))
	if err != nil {
		return fmt.Errorf("sqlite: set store id: %w", wrapDamage(wrapBusy(err)))
	}
	return nil
}

// Check runs SQLite's quick integrity check. A damaged database fails,
// wrapping tine.ErrStore, with SQLite's first complaint.
func (s *Store) Check(ctx context.Context) error {
	var res string
	if err := s.read.QueryRowContext(ctx, "PRAGMA quick_check(1)").Scan(&res); err != nil {
		return fmt.Errorf("sqlite: integrity check: %w", wrapDamage(wrapBusy(err)))
	}
	if res != "ok" {
		return fmt.Errorf("sqlite: integrity check: %s: %w", res, tine.ErrStore)
	}
	return nil
}

// Close closes both connection pools.
func (s *Store) Close() error {
	return errors.Join(s.write.Close(), s.read.Close())
}

// View runs fn in a read-only transaction: it sees one consistent snapshot
// and any write it attempts fails.
func (s *Store) View(ctx context.Context, fn func(tine.Tx) error) error {
	return do(ctx, s.read, &sql.TxOptions{ReadOnly: true}, s.records(ctx, fn))
}

// Update runs fn in a read-write transaction, committed when fn returns nil
// and rolled back when it returns an error or panics. Updates are serialized,
// across processes too; fn must not call Update on the same Store.
func (s *Store) Update(ctx context.Context, fn func(tine.Tx) error) error {
	return do(ctx, s.write, nil, s.records(ctx, fn))
}

// records gives fn, a View or Update callback, the records of the
// transaction do runs it in.
func (s *Store) records(ctx context.Context, fn func(tine.Tx) error) func(sqltx.DB) error {
	return func(c sqltx.DB) error { return fn(sqltx.New(ctx, c, &dialect, s.now)) }
}

// do runs fn in a transaction on db begun with opts, committed when fn
// returns nil. The deferred rollback also runs when fn panics, before the
// panic goes on up the stack.
func do(ctx context.Context, db *sql.DB, opts *sql.TxOptions, fn func(sqltx.DB) error) error {
	sqlTx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return fmt.Errorf("sqlite: begin: %w", wrapDamage(wrapBusy(err)))
	}
	defer func() { _ = sqlTx.Rollback() }() // no-op once committed
	if err := fn(conn{sqlTx}); err != nil {
		return wrapDamage(err) // a damaged page a query reached: tine.ErrStore
	}
	if err := sqlTx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit: %w", wrapDamage(wrapBusy(err)))
	}
	return nil
}
