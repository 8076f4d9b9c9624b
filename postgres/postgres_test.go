package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/postgres/pgtest"
	"github.com/tinehq/tine/store/storetest"
)

// openAt opens the store at url and closes it when tb ends.
func openAt(tb testing.TB, url string) *Store {
	tb.Helper()
	s, err := Open(url)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the store conformance suite against a real
// PostgreSQL: every test in a schema of its own, and a second handle
// (another pool) on it standing for another process.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(tb testing.TB) func() engine.StoreFile {
		url := pgtest.URL(tb)
		return func() engine.StoreFile { return openAt(tb, url) }
	})
}

func TestStore_Migrate(t *testing.T) {
	url := pgtest.URL(t)
	version := func(s *Store) int {
		t.Helper()
		var v int
		if err := s.pool.QueryRow(context.Background(), "SELECT version FROM schema_version").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	s := openAt(t, url)
	if got := version(s); got != SchemaVersion() {
		t.Errorf("schema version %d, want %d", got, SchemaVersion())
	}
	t.Run("Concurrent", func(t *testing.T) {
		// Several processes opening one new database at once: each step once.
		url := pgtest.URL(t)
		errs := make(chan error, 4)
		for range 4 {
			go func() {
				s, err := Open(url)
				if err == nil {
					s.Close()
				}
				errs <- err
			}()
		}
		for range 4 {
			if err := <-errs; err != nil {
				t.Errorf("Open: %v", err)
			}
		}
	})
	t.Run("Upgrade", func(t *testing.T) {
		url := pgtest.URL(t)
		openAt(t, url).Close()
		old := migrations
		migrations = append(migrations[:len(old):len(old)],
			"CREATE TABLE extra (x INTEGER); INSERT INTO extra VALUES (7);",
			"UPDATE extra SET x = x * 6;")
		defer func() { migrations = old }()
		s := openAt(t, url)
		if got := version(s); got != len(old)+2 {
			t.Errorf("schema version %d, want %d", got, len(old)+2)
		}
		var x int
		if err := s.pool.QueryRow(context.Background(), "SELECT x FROM extra").Scan(&x); err != nil || x != 42 {
			t.Errorf("extra.x = %d, %v; want 42", x, err)
		}
	})
	t.Run("TooNew", func(t *testing.T) {
		url := pgtest.URL(t)
		s := openAt(t, url)
		if _, err := s.pool.Exec(context.Background(), "UPDATE schema_version SET version = 99"); err != nil {
			t.Fatal(err)
		}
		_, err := Open(url)
		if !errors.Is(err, tine.ErrUnsupported) || !strings.Contains(err.Error(), "schema version 99") {
			t.Errorf("Open = %v, want ErrUnsupported naming version 99", err)
		}
		if err := s.Check(context.Background()); !errors.Is(err, tine.ErrStore) {
			t.Errorf("Check = %v, want ErrStore", err)
		}
	})
}

// A writer that waits longer than the lock timeout for another fails with
// tine.ErrBusy, as SQLite's does after its busy timeout.
func TestStore_Busy(t *testing.T) {
	url := pgtest.WithParam(t, pgtest.URL(t), "lock_timeout", "200")
	holder, waiter := openAt(t, url), openAt(t, url)
	held, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- holder.Update(context.Background(), func(tine.Tx) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	start := time.Now()
	err := waiter.Update(context.Background(), func(tx tine.Tx) error {
		return tx.PutWorkspace(&tine.Workspace{ID: "w1", Name: "w1", Path: "/w1"})
	})
	close(release)
	if !errors.Is(err, tine.ErrBusy) {
		t.Errorf("Update while another holds the writer lock: %v, want ErrBusy", err)
	}
	if d := time.Since(start); d < 150*time.Millisecond || d > 5*time.Second {
		t.Errorf("gave up after %v, want about the 200ms lock timeout", d)
	}
	if err := <-done; err != nil {
		t.Errorf("holder: %v", err)
	}
	// The waiter's pool is sound again: its next Update goes through.
	if err := waiter.Update(context.Background(), func(tx tine.Tx) error {
		return tx.PutWorkspace(&tine.Workspace{ID: "w1", Name: "w1", Path: "/w1"})
	}); err != nil {
		t.Errorf("Update after the lock was released: %v", err)
	}
}

// Events appended by any process wake a waiter when they commit, and
// not before.
func TestStore_WaitEvents(t *testing.T) {
	url := pgtest.URL(t)
	s, other := openAt(t, url), openAt(t, url)
	ctx := context.Background()
	appendOne := func(st *Store) int64 {
		e := &tine.Event{Kind: "x"}
		if err := st.Update(ctx, func(tx tine.Tx) error { return tx.AppendEvent(e) }); err != nil {
			t.Fatal(err)
		}
		return e.Seq
	}
	first := appendOne(s)
	// An event already there: no wait.
	if err := s.WaitEvents(ctx, first-1); err != nil {
		t.Fatal(err)
	}
	// Nothing new: the wait ends with its context.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := s.WaitEvents(short, first); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitEvents with nothing new: %v, want the deadline", err)
	}
	// Another process's commit wakes it.
	woke := make(chan error, 1)
	go func() { woke <- s.WaitEvents(ctx, first) }()
	time.Sleep(50 * time.Millisecond)
	select {
	case err := <-woke:
		t.Fatalf("WaitEvents returned before any commit: %v", err)
	default:
	}
	appendOne(other)
	select {
	case err := <-woke:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(5 * time.Second):
		t.Error("WaitEvents did not wake at another handle's commit")
	}
}

func TestOpen_Errors(t *testing.T) {
	tests := []struct {
		name, url string
		want      error
		not       string
	}{
		{"NotAURL", "postgres://u:secret@[::1", tine.ErrInvalid, "secret"},
		{"NoSchema", "", tine.ErrInvalid, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := tt.url
			if url == "" {
				url = pgtest.WithParam(t, pgtest.URL(t), "search_path", "no_such_schema")
			}
			_, err := Open(url)
			if !errors.Is(err, tt.want) {
				t.Errorf("Open(%s) = %v, want %v", tt.name, err, tt.want)
			}
			if tt.not != "" && err != nil && strings.Contains(err.Error(), tt.not) {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
	t.Run("Unreachable", func(t *testing.T) {
		_, err := Open("postgres://tine:secret@127.0.0.1:1/tine?connect_timeout=2")
		if err == nil || strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "127.0.0.1:1") {
			t.Errorf("Open of a server that is not there: %v, want an error naming it without the password", err)
		}
	})
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://tine:s3cret@db:5432/tine":           "postgres://tine:xxxxx@db:5432/tine",
		"postgres://tine@db/tine?password=s3cret":       "postgres://tine@db/tine?password=xxxxx",
		"host=db user=tine password='s 3cret' dbname=t": "host=db user=tine password=xxxxx dbname=t",
		"host=db user=tine password=s3cret dbname=tine": "host=db user=tine password=xxxxx dbname=tine",
		"postgres://db/tine":                            "postgres://db/tine",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// BenchmarkStoreFork measures the store transactions of one fork on
// PostgreSQL; sqlite.BenchmarkStoreFork measures the same on SQLite.
func BenchmarkStoreFork(b *testing.B) {
	storetest.BenchmarkFork(b, func(tb testing.TB) func() engine.StoreFile {
		url := pgtest.URL(tb)
		return func() engine.StoreFile { return openAt(tb, url) }
	})
}
