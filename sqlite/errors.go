package sqlite

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/tinehq/tine"
	"golang.org/x/sys/unix"
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

// wrapFull says, of err from opening or writing the store, that the disk
// holding dir is full, when it is: SQLite says only that it cannot open
// the file (it cannot make its log) or that an I/O failed.
func wrapFull(err error, dir string) error {
	switch code(err) & 0xff {
	case sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL:
	default:
		return err
	}
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return err
	}
	switch {
	case st.Files > 0 && st.Ffree == 0:
		return fmt.Errorf("the disk holding %s is full (no inode left): %w: %w", dir, syscall.ENOSPC, err)
	case st.Bavail == 0:
		return fmt.Errorf("the disk holding %s is full: %w: %w", dir, syscall.ENOSPC, err)
	}
	return err
}
