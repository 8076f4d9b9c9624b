package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/tinehq/tine/store/sqltx"
)

// newDialect returns PostgreSQL's dialect for a store whose appended
// events notify channel: tables list in the order of their ord identity,
// lists are arrays, a unique violation names its constraint, and
// appending an event notifies the channel of its seq in the same
// statement (delivered at commit; see WaitEvents).
func newDialect(channel string) *sqltx.Dialect {
	return &sqltx.Dialect{
		Order:      "ord",
		Arrays:     true,
		Unique:     func(err error) (string, bool) { return violated(err, codeUnique) },
		ForeignKey: func(err error) bool { _, ok := violated(err, codeForeignKey); return ok },
		AppendEvent: `WITH e AS (
				INSERT INTO events (time, workspace, run, kind, detail) VALUES (?, ?, ?, ?, ?) RETURNING seq)
			SELECT e.seq FROM e CROSS JOIN LATERAL (SELECT pg_notify(?, e.seq::text)) AS n`,
		EventArgs: []any{channel},
	}
}

// conn adapts a pgx transaction to sqltx.DB: it numbers the queries'
// placeholders and adds tine.ErrBusy to the errors that say a statement
// waited too long for a lock or lost to a concurrent transaction.
type conn struct{ tx pgx.Tx }

// QueryRow implements sqltx.DB.
func (c conn) QueryRow(ctx context.Context, query string, args ...any) sqltx.Row {
	return busyRow{c.tx.QueryRow(ctx, sqltx.Numbered(query), args...)}
}

// Query implements sqltx.DB.
func (c conn) Query(ctx context.Context, query string, args ...any) (sqltx.Rows, error) {
	r, err := c.tx.Query(ctx, sqltx.Numbered(query), args...)
	if err != nil {
		return nil, wrapBusy(err)
	}
	return busyRows{r}, nil
}

// Exec implements sqltx.DB.
func (c conn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := c.tx.Exec(ctx, sqltx.Numbered(query), args...)
	return tag.RowsAffected(), wrapBusy(err)
}

// busyRow is a pgx.Row whose Scan wraps busy errors.
type busyRow struct{ pgx.Row }

// Scan implements sqltx.Row.
func (r busyRow) Scan(dest ...any) error { return wrapBusy(r.Row.Scan(dest...)) }

// busyRows are pgx.Rows whose Err wraps busy errors.
type busyRows struct{ pgx.Rows }

// Err implements sqltx.Rows.
func (r busyRows) Err() error { return wrapBusy(r.Rows.Err()) }
