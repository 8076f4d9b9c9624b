package sqltx

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tinehq/tine"
)

// DB is one transaction of a driver, adapted: database/sql's *sql.Tx for
// SQLite, pgx.Tx for PostgreSQL. Queries are written with ? placeholders;
// an adapter for a database that numbers them rewrites the text with
// Numbered. A row that is not there is an error matching sql.ErrNoRows
// (pgx.ErrNoRows does).
type DB interface {
	// QueryRow runs a query expected to return at most one row.
	QueryRow(ctx context.Context, query string, args ...any) Row
	// Query runs a query returning rows.
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	// Exec runs a statement and returns how many rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
}

// Row is a row of QueryRow: *sql.Row or pgx.Row.
type Row interface{ Scan(dest ...any) error }

// Rows are the rows of Query, as *sql.Rows and pgx.Rows read them.
type Rows interface {
	Row
	Next() bool
	Err() error
	Close()
}

// Dialect is what differs between the SQL databases a Tx runs on.
type Dialect struct {
	// Order is the column that breaks ties of created_at in insertion
	// order: SQLite's rowid, or the ord identity column of PostgreSQL's
	// tables.
	Order string
	// Arrays says list columns (a version's layers, a workspace's
	// granted groups) are arrays, bound and scanned as Go slices; else
	// they are JSON text.
	Arrays bool
	// Unique reports whether err is a violated primary key or unique
	// index, and the name of the constraint when the database says it
	// (PostgreSQL does). When it does not (SQLite), the Tx asks the
	// table which key clashed.
	Unique func(err error) (constraint string, ok bool)
	// ForeignKey reports whether err is a violated foreign key.
	ForeignKey func(err error) bool
	// AppendEvent is the statement that appends an event: it takes the
	// time, workspace, run, kind and detail, then EventArgs, and returns
	// the new event's seq.
	AppendEvent string
	// EventArgs are AppendEvent's further arguments.
	EventArgs []any
}

// Tx implements tine.Tx on one transaction of a SQL database. It is
// valid only while the View or Update callback that received it runs.
type Tx struct {
	ctx context.Context
	db  DB
	d   *Dialect
	now func() time.Time
}

var _ tine.Tx = (*Tx)(nil)

// New returns the tine.Tx of db, a transaction of a database speaking d,
// that runs its statements under ctx and stamps records with now.
func New(ctx context.Context, db DB, d *Dialect, now func() time.Time) *Tx {
	return &Tx{ctx: ctx, db: db, d: d, now: now}
}

// Numbered rewrites the ? placeholders of query as $1, $2, … in order,
// leaving alone those in quoted strings and identifiers and in -- comments.
func Numbered(query string) string {
	if !strings.Contains(query, "?") {
		return query
	}
	var b strings.Builder
	n := 0
	var end byte // what closes the string, identifier or comment the scan is in
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case end != 0:
			if c == end {
				end = 0
			}
		case c == '\'' || c == '"':
			end = c
		case c == '-' && strings.HasPrefix(query[i:], "--"):
			end = '\n'
		case c == '?':
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// unixNano encodes t for a time column: Unix nanoseconds in UTC.
func unixNano(t time.Time) int64 { return t.UnixNano() }

// fromUnixNano decodes a time column.
func fromUnixNano(n int64) time.Time { return time.Unix(0, n).UTC() }

// optNano encodes a time that may be zero: the zero time is 0.
func optNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return unixNano(t)
}

// fromOptNano decodes optNano.
func fromOptNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return fromUnixNano(n)
}

// stamp sets *ts to now if it is zero.
func (t *Tx) stamp(ts *time.Time) {
	if ts.IsZero() {
		*ts = t.now()
	}
}

// NotFound returns the error for a missing record: `run "rabc": not found`.
func NotFound(what, id string) error {
	return fmt.Errorf("%s %q: %w", what, id, tine.ErrNotFound)
}

// get runs a single-row query and scans its row into a new T, returning
// NotFound(what, id) if there is no row.
func get[T any](t *Tx, scan func(Row) (*T, error), what, id, query string, args ...any) (*T, error) {
	v, err := scan(t.db.QueryRow(t.ctx, query, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, NotFound(what, id)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s %q: %w", what, id, err)
	}
	return v, nil
}

// list runs a query and scans every row into a new T.
func list[T any](t *Tx, scan func(Row) (*T, error), what, query string, args ...any) ([]*T, error) {
	rows, err := t.db.Query(t.ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", what, err)
	}
	defer rows.Close()
	var out []*T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list %s: %w", what, err)
	}
	return out, nil
}

// inOrder returns the ORDER BY clause listing a table's rows in creation
// order.
func (t *Tx) inOrder() string {
	return " ORDER BY created_at, " + t.d.Order
}

// del deletes the row of table with the given id, returning NotFound if
// there is none.
func (t *Tx) del(table, what, id string) error {
	n, err := t.db.Exec(t.ctx, "DELETE FROM "+table+" WHERE id = ?", id)
	if err != nil {
		return fmt.Errorf("delete %s %q: %w", what, id, err)
	}
	return affected(n, what, id)
}

// affected returns NotFound(what, id) if n, the rows a statement changed,
// is 0.
func affected(n int64, what, id string) error {
	if n == 0 {
		return NotFound(what, id)
	}
	return nil
}
