package sqltx

import (
	"context"
	"fmt"

	"github.com/tinehq/tine"
)

// Schema is a database's schema changes and where it records how many it
// has applied.
type Schema struct {
	// Migrations are the schema changes in order: Migrations[i] takes
	// the database from schema version i to i+1. Append only; never edit
	// one that has shipped.
	Migrations []string
	// Version reads the database's schema version.
	Version func(ctx context.Context, db DB) (int, error)
	// SetVersion records the database's schema version as v.
	SetVersion func(ctx context.Context, db DB, v int) error
}

// Migrate applies the migrations the database lacks, each in its own
// transaction: write runs fn in a transaction that holds the database's
// write lock, committed when fn returns nil, so that of several processes
// migrating at once each step is applied by one.
func (s *Schema) Migrate(ctx context.Context, write func(fn func(DB) error) error) error {
	for {
		var done bool
		err := write(func(db DB) (err error) {
			done, err = s.Step(ctx, db)
			return err
		})
		if err != nil || done {
			return err
		}
	}
}

// Step applies the next migration the database db is a transaction of
// lacks, or reports done if it lacks none; see Migrate. A database
// written by a newer tine, at a version Migrations do not reach, fails
// wrapping tine.ErrUnsupported.
func (s *Schema) Step(ctx context.Context, db DB) (done bool, err error) {
	v, err := s.Version(ctx, db)
	if err != nil {
		return false, fmt.Errorf("read schema version: %w", err)
	}
	switch {
	case v == len(s.Migrations):
		return true, nil
	case v > len(s.Migrations):
		return false, fmt.Errorf("schema version %d is newer than this tine knows (%d); upgrade tine: %w",
			v, len(s.Migrations), tine.ErrUnsupported)
	}
	if _, err := db.Exec(ctx, s.Migrations[v]); err != nil {
		return false, fmt.Errorf("migrate to schema version %d: %w", v+1, err)
	}
	if err := s.SetVersion(ctx, db, v+1); err != nil {
		return false, fmt.Errorf("migrate to schema version %d: %w", v+1, err)
	}
	return false, nil
}
