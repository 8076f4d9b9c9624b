package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/tinehq/tine"
)

// tx implements tine.Tx on one pgx transaction. It is valid only while the
// View or Update callback that received it runs.
type tx struct {
	ctx     context.Context
	tx      pgx.Tx
	now     func() time.Time
	channel string // where AppendEvent notifies
}

var _ tine.Tx = (*tx)(nil)

// scanner is a pgx.Row or pgx.Rows.
type scanner interface{ Scan(dest ...any) error }

// unixNano encodes t for a time column.
func unixNano(t time.Time) int64 { return t.UnixNano() }

// fromUnixNano decodes a time column.
func fromUnixNano(n int64) time.Time { return time.Unix(0, n).UTC() }

// stamp sets *ts to now if it is zero.
func (t *tx) stamp(ts *time.Time) {
	if ts.IsZero() {
		*ts = t.now()
	}
}

// get runs a single-row query and scans its row into a new T, returning
// notFound(what, id) if there is no row.
func get[T any](t *tx, scan func(scanner) (*T, error), what, id, query string, args ...any) (*T, error) {
	v, err := scan(t.tx.QueryRow(t.ctx, query, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound(what, id)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s %q: %w", what, id, wrapBusy(err))
	}
	return v, nil
}

// list runs a query and scans every row into a new T.
func list[T any](t *tx, scan func(scanner) (*T, error), what, query string, args ...any) ([]*T, error) {
	rows, err := t.tx.Query(t.ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", what, wrapBusy(err))
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
		return nil, fmt.Errorf("list %s: %w", what, wrapBusy(err))
	}
	return out, nil
}

// exec runs a statement that returns no rows.
func (t *tx) exec(query string, args ...any) (pgconn.CommandTag, error) {
	tag, err := t.tx.Exec(t.ctx, query, args...)
	return tag, wrapBusy(err)
}

// del deletes the row of table with the given id, returning notFound if
// there is none.
func (t *tx) del(table, what, id string) error {
	tag, err := t.exec("DELETE FROM "+table+" WHERE id = $1", id)
	if err != nil {
		return fmt.Errorf("delete %s %q: %w", what, id, err)
	}
	return affected(tag, what, id)
}

// affected returns notFound(what, id) if tag changed no row.
func affected(tag pgconn.CommandTag, what, id string) error {
	if tag.RowsAffected() == 0 {
		return notFound(what, id)
	}
	return nil
}

// keys describes a table's uniqueness constraints, by constraint name, for
// the error that reports a clash on one: `run name "fix-1" in workspace
// "wabc"`.
type keys map[string]string

// insert runs an INSERT and translates constraint failures: a clash on one
// of keys wraps tine.ErrExists and names the key, a missing workspace wraps
// tine.ErrNotFound.
func (t *tx) insert(what, ws string, k keys, query string, args ...any) error {
	_, err := t.tx.Exec(t.ctx, query, args...)
	return writeErr(err, what, ws, k)
}

// writeErr translates an INSERT or UPDATE error; see insert. PostgreSQL
// names the constraint a write broke, so no query is needed to find it
// (none could run: the transaction is aborted).
func writeErr(err error, what, ws string, k keys) error {
	if err == nil {
		return nil
	}
	if name, ok := violated(err, codeUnique); ok {
		if desc, ok := k[name]; ok {
			return fmt.Errorf("%s: %w", desc, tine.ErrExists)
		}
		return fmt.Errorf("put %s: %w: %w", what, tine.ErrExists, err)
	}
	if _, ok := violated(err, codeForeignKey); ok {
		return notFound("workspace", ws)
	}
	return fmt.Errorf("put %s: %w", what, wrapBusy(err))
}

// filter builds a WHERE clause from equality tests on non-empty values,
// numbering its parameters.
type filter struct {
	conds []string
	args  []any
}

// eq adds "col = val" unless val is empty.
func (f *filter) eq(col, val string) {
	if val != "" {
		f.add(col+" = ", val)
	}
}

// add adds the condition cond followed by a parameter for arg, as in
// add("seq > ", 7).
func (f *filter) add(cond string, arg any) {
	f.args = append(f.args, arg)
	f.conds = append(f.conds, cond+"$"+strconv.Itoa(len(f.args)))
}

// String returns the WHERE clause, or "" if there are no conditions.
func (f *filter) String() string {
	if len(f.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(f.conds, " AND ")
}
