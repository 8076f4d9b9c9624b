package sqltx

import (
	"fmt"
	"strings"

	"github.com/tinehq/tine"
)

// uniqueKey is one uniqueness constraint of a table, described for the
// error that reports a clash on it.
type uniqueKey struct {
	name  string // the constraint's name in PostgreSQL's schema, e.g. "runs_name"
	desc  string // e.g. `run name "fix-1" in workspace "wabc"`
	where string // e.g. "workspace = ? AND name = ?", for a database that does not name it
	args  []any
}

// idKey is the uniqueness of the id column of table, holding the record
// what.
func idKey(table, what, id string) uniqueKey {
	return uniqueKey{table + "_id", fmt.Sprintf("%s id %q", what, id), "id = ?", []any{id}}
}

// insert runs an INSERT and translates constraint failures: a clash on one
// of keys wraps tine.ErrExists and names the key, a missing workspace wraps
// tine.ErrNotFound.
func (t *Tx) insert(what, table, ws string, keys []uniqueKey, query string, args ...any) error {
	_, err := t.db.Exec(t.ctx, query, args...)
	return t.writeErr(err, what, table, ws, keys)
}

// writeErr translates an INSERT or UPDATE error; see insert.
func (t *Tx) writeErr(err error, what, table, ws string, keys []uniqueKey) error {
	if err == nil {
		return nil
	}
	if name, ok := t.d.Unique(err); ok {
		return t.clash(err, what, table, name, keys)
	}
	if t.d.ForeignKey(err) {
		return NotFound("workspace", ws)
	}
	return fmt.Errorf("put %s: %w", what, err)
}

// clash finds which of keys a unique violation err was about: the one
// called name when the database named the constraint (PostgreSQL, whose
// transaction is aborted and could run no query), else the first one a
// row of table already holds (SQLite says which columns clashed only in
// its message text).
func (t *Tx) clash(err error, what, table, name string, keys []uniqueKey) error {
	for _, k := range keys {
		if name == k.name || name == "" && t.taken(table, k) {
			return fmt.Errorf("%s: %w", k.desc, tine.ErrExists)
		}
	}
	return fmt.Errorf("put %s: %w: %w", what, tine.ErrExists, err)
}

// taken reports whether a row of table holds key k.
func (t *Tx) taken(table string, k uniqueKey) bool {
	var taken bool
	q := "SELECT EXISTS (SELECT 1 FROM " + table + " WHERE " + k.where + ")"
	return t.db.QueryRow(t.ctx, q, k.args...).Scan(&taken) == nil && taken
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
