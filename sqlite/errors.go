package sqlite

import (
	"errors"
	"fmt"

	"github.com/tinehq/tine"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// code returns the extended SQLite result code of err, or 0 if err does not
// come from SQLite.
func code(err error) int {
	var e *sqlite.Error
	if errors.As(err, &e) {
		return e.Code()
	}
	return 0
}

// wrapBusy adds tine.ErrBusy to err if SQLite gave up waiting for a lock.
func wrapBusy(err error) error {
	if c := code(err); c&0xff == sqlite3.SQLITE_BUSY || c&0xff == sqlite3.SQLITE_LOCKED {
		return fmt.Errorf("%w: %w", tine.ErrBusy, err)
	}
	return err
}

// wrapDamage adds tine.ErrStore to err if SQLite found the file is not a
// database, or is damaged.
func wrapDamage(err error) error {
	switch code(err) & 0xff {
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return fmt.Errorf("%w: %w", tine.ErrStore, err)
	}
	return err
}

// isUnique reports whether err is a violated primary key or unique index.
func isUnique(err error) bool {
	c := code(err)
	return c == sqlite3.SQLITE_CONSTRAINT_UNIQUE || c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}

// isForeignKey reports whether err is a violated foreign key.
func isForeignKey(err error) bool {
	return code(err) == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

// notFound returns the error for a missing record: `run "rabc": not found`.
func notFound(what, id string) error {
	return fmt.Errorf("%s %q: %w", what, id, tine.ErrNotFound)
}
