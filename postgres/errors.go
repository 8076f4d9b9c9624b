package postgres

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/lazyre"
)

// SQLSTATE codes the store translates.
const (
	codeUnique        = "23505" // unique_violation
	codeForeignKey    = "23503" // foreign_key_violation
	codeSerialization = "40001" // serialization_failure
	codeDeadlock      = "40P01" // deadlock_detected
	codeLockTimeout   = "55P03" // lock_not_available
)

// pgError returns err's PostgreSQL error, or nil if err is not one.
func pgError(err error) *pgconn.PgError {
	var e *pgconn.PgError
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// wrapBusy adds tine.ErrBusy to err if it says the transaction waited too
// long for a lock or lost to a concurrent one (a serialization failure or
// a deadlock): what SQLite reports as busy.
func wrapBusy(err error) error {
	if e := pgError(err); e != nil {
		switch e.Code {
		case codeLockTimeout, codeSerialization, codeDeadlock:
			return fmt.Errorf("%w: %w", tine.ErrBusy, err)
		}
	}
	return err
}

// violated returns the name of the constraint err broke, if err is a
// violation of the given SQLSTATE code.
func violated(err error, code string) (string, bool) {
	if e := pgError(err); e != nil && e.Code == code {
		return e.ConstraintName, true
	}
	return "", false
}

// password matches a password in a key=value connection string.
var password = lazyre.New(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// Redact returns a connection URL or string with its password replaced by
// xxxxx, for messages.
func Redact(s string) string {
	if u, err := url.Parse(s); err == nil && u.Scheme != "" {
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.Redacted()
	}
	return password().ReplaceAllString(s, "${1}xxxxx")
}

// oneLine is an error whose text is made one line: pgx says why it could
// not connect with a line for each address it tried, often the same line
// twice (with TLS and without). It unwraps to the error it shows.
type oneLine struct{ err error }

func (e oneLine) Error() string {
	var lines []string
	for _, l := range strings.Split(e.err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" && !slices.Contains(lines, l) {
			lines = append(lines, l)
		}
	}
	return strings.TrimSuffix(strings.Join(lines, " "), ":")
}

func (e oneLine) Unwrap() error { return e.err }
