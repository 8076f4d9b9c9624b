package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tinehq/tine"
)

// tx implements tine.Tx on one database/sql transaction. It is valid only
// while the View or Update callback that received it runs.
type tx struct {
	ctx context.Context
	tx  *sql.Tx
	now func() time.Time
}

var _ tine.Tx = (*tx)(nil)

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// unixNano encodes t for a time column.
func unixNano(t time.Time) int64 { return t.UnixNano() }

// fromUnixNano decodes a time column.
func fromUnixNano(n int64) time.Time { return time.Unix(0, n).UTC() }

// stamp sets *t to now if it is zero.
func (t *tx) stamp(ts *time.Time) {
	if ts.IsZero() {
		*ts = t.now()
	}
}

// get runs a single-row query and scans its row into a new T, returning
// notFound(what, id) if there is no row.
func get[T any](t *tx, scan func(scanner) (*T, error), what, id, query string, args ...any) (*T, error) {
	v, err := scan(t.tx.QueryRowContext(t.ctx, query, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound(what, id)
	}
	if err != nil {
		return nil, fmt.Errorf("get %s %q: %w", what, id, err)
	}
	return v, nil
}

// list runs a query and scans every row into a new T.
func list[T any](t *tx, scan func(scanner) (*T, error), what, query string, args ...any) ([]*T, error) {
	rows, err := t.tx.QueryContext(t.ctx, query, args...)
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

// del deletes the row of table with the given id, returning notFound if
// there is none.
func (t *tx) del(table, what, id string) error {
	res, err := t.tx.ExecContext(t.ctx, "DELETE FROM "+table+" WHERE id = ?", id)
	if err != nil {
		return fmt.Errorf("delete %s %q: %w", what, id, err)
	}
	return affected(res, what, id)
}

// affected returns notFound(what, id) if res changed no row.
func affected(res sql.Result, what, id string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("%s %q: %w", what, id, err)
	}
	if n == 0 {
		return notFound(what, id)
	}
	return nil
}

// uniqueKey is one uniqueness constraint of a table, described for the
// error that reports a clash on it.
type uniqueKey struct {
	desc  string // e.g. `run name "fix-1" in workspace "wabc"`
	where string // e.g. "workspace = ? AND name = ?"
	args  []any
}

// insert runs an INSERT and translates constraint failures: a clash on one
// of keys wraps tine.ErrExists and names the key, a missing workspace wraps
// tine.ErrNotFound.
func (t *tx) insert(what, table, ws string, keys []uniqueKey, query string, args ...any) error {
	_, err := t.tx.ExecContext(t.ctx, query, args...)
	return t.writeErr(err, what, table, ws, keys)
}

// writeErr translates an INSERT or UPDATE error; see insert.
func (t *tx) writeErr(err error, what, table, ws string, keys []uniqueKey) error {
	switch {
	case err == nil:
		return nil
	case isUnique(err):
		return t.clash(err, what, table, keys)
	case isForeignKey(err):
		return notFound("workspace", ws)
	}
	return fmt.Errorf("put %s: %w", what, err)
}

// clash finds which of keys a unique violation err was about. SQLite says
// which columns clashed only in its message text, so ask the table instead.
func (t *tx) clash(err error, what, table string, keys []uniqueKey) error {
	for _, k := range keys {
		var taken bool
		q := "SELECT EXISTS (SELECT 1 FROM " + table + " WHERE " + k.where + ")"
		if t.tx.QueryRowContext(t.ctx, q, k.args...).Scan(&taken) == nil && taken {
			return fmt.Errorf("%s: %w", k.desc, tine.ErrExists)
		}
	}
	return fmt.Errorf("put %s: %w: %w", what, tine.ErrExists, err)
}

// filter builds a WHERE clause from equality tests on non-empty values.
type filter struct {
	conds []string
	args  []any
}

// eq adds "col = val" unless val is empty.
func (f *filter) eq(col, val string) {
	if val != "" {
		f.add(col+" = ?", val)
	}
}

// add adds a condition with its arguments.
func (f *filter) add(cond string, args ...any) {
	f.conds = append(f.conds, cond)
	f.args = append(f.args, args...)
}

// String returns the WHERE clause, or "" if there are no conditions.
func (f *filter) String() string {
	if len(f.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(f.conds, " AND ")
}
