package sqlite

import (
	"context"
	"database/sql"

	"github.com/tinehq/tine/store/sqltx"
)

// dialect is SQLite's: tables list in rowid order, lists are JSON text,
// and a unique violation does not say which key clashed.
var dialect = sqltx.Dialect{
	Order:       "rowid",
	Unique:      func(err error) (string, bool) { return "", isUnique(err) },
	ForeignKey:  isForeignKey,
	AppendEvent: "INSERT INTO events (time, workspace, run, kind, detail) VALUES (?, ?, ?, ?, ?) RETURNING seq",
}

// conn adapts a database/sql transaction to sqltx.DB.
type conn struct{ tx *sql.Tx }

// QueryRow implements sqltx.DB.
func (c conn) QueryRow(ctx context.Context, query string, args ...any) sqltx.Row {
	return c.tx.QueryRowContext(ctx, query, args...)
}

// Query implements sqltx.DB.
func (c conn) Query(ctx context.Context, query string, args ...any) (sqltx.Rows, error) {
	r, err := c.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return rows{r}, nil
}

// Exec implements sqltx.DB.
func (c conn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := c.tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// rows are *sql.Rows as sqltx.Rows.
type rows struct{ *sql.Rows }

// Close closes the rows; an error closing is reported by Err.
func (r rows) Close() { _ = r.Rows.Close() }
