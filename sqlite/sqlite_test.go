package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/store/storetest"
)

// openTest opens a store in a fresh directory and closes it when t ends.
func openTest(t testing.TB) *Store {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "tine.db"))
}

// openAt opens the store at path and closes it when t ends.
func openAt(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// pragma returns the value of PRAGMA name on connection c.
func pragma(t *testing.T, c *sql.Conn, name string) string {
	t.Helper()
	var got string
	if err := c.QueryRowContext(context.Background(), "PRAGMA "+name).Scan(&got); err != nil {
		t.Fatalf("PRAGMA %s: %v", name, err)
	}
	return got
}

// TestConformance runs the store conformance suite: every test on a fresh
// database file, and a second handle on it standing for another process.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(tb testing.TB) func() engine.StoreFile {
		path := filepath.Join(tb.TempDir(), "tine.db")
		return func() engine.StoreFile { return openAt(tb, path) }
	})
}

func TestStore_Open(t *testing.T) {
	s := openTest(t)
	want := map[string]string{
		"journal_mode": "wal",
		"busy_timeout": strconv.Itoa(int(BusyTimeout.Milliseconds())),
		"foreign_keys": "1",
		"synchronous":  "2", // FULL: every commit is synced
	}
	pools := []struct {
		name  string
		db    *sql.DB
		conns int
	}{{"Write", s.write, 1}, {"Read", s.read, 3}}
	for _, p := range pools {
		t.Run(p.name, func(t *testing.T) {
			// Hold several connections at once so the pool must open new ones.
			for i := range p.conns {
				c, err := p.db.Conn(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				for name, v := range want {
					if got := pragma(t, c, name); got != v {
						t.Errorf("conn %d: PRAGMA %s = %q, want %q", i, name, got, v)
					}
				}
			}
		})
	}
}

func TestStore_OpenOddPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a dir?x=1#frag%20")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tine.db")
	storetest.Seed(t, openAt(t, path))
	if _, err := os.Stat(path); err != nil {
		t.Errorf("database not at %q: %v", path, err)
	}
}

func TestStore_Migrate(t *testing.T) {
	userVersion := func(t *testing.T, s *Store) int {
		t.Helper()
		var v int
		if err := s.read.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	t.Run("FromEmpty", func(t *testing.T) {
		s := openTest(t)
		if got := userVersion(t, s); got != SchemaVersion() {
			t.Errorf("user_version = %d, want %d", got, SchemaVersion())
		}
		storetest.Seed(t, s)
	})
	t.Run("Reopen", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "tine.db")
		s, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		storetest.Seed(t, s)
		s.Close()
		s = openAt(t, path)
		if got := userVersion(t, s); got != SchemaVersion() {
			t.Errorf("user_version = %d, want %d", got, SchemaVersion())
		}
		storetest.View(t, s, func(tx tine.Tx) error {
			_, err := tx.Workspace("w1")
			return err
		})
	})
	t.Run("Upgrade", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "tine.db")
		s, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		storetest.Seed(t, s)
		s.Close()
		old := migrations
		migrations = append(migrations[:len(old):len(old)],
			"CREATE TABLE extra (x INTEGER); INSERT INTO extra VALUES (7);",
			"UPDATE extra SET x = x * 6;")
		defer func() { migrations = old }()
		s = openAt(t, path)
		if got := userVersion(t, s); got != len(old)+2 {
			t.Errorf("user_version = %d, want %d", got, len(old)+2)
		}
		var x int
		if err := s.read.QueryRow("SELECT x FROM extra").Scan(&x); err != nil || x != 42 {
			t.Errorf("extra.x = %d, %v; want 42", x, err)
		}
	})
	t.Run("OwnersFromSchema4", func(t *testing.T) {
		// A store made before owners were recorded: its workspaces get the
		// owner of the store's directory.
		dir := t.TempDir()
		path := filepath.Join(dir, "tine.db")
		db, err := openDB(path, syncFull, "_txlock=immediate")
		if err != nil {
			t.Fatal(err)
		}
		old := migrations
		migrations = old[:4]
		err = migrate(context.Background(), db)
		migrations = old
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec("INSERT INTO workspaces (id, name, path, backend, created_at) VALUES ('w1', 'w1', '/w1', 'copy', 0)"); err != nil {
			t.Fatal(err)
		}
		db.Close()
		uid, gid := os.Getuid(), os.Getgid()
		if os.Geteuid() == 0 {
			uid, gid = 1001, 1002
			if err := os.Chown(dir, uid, gid); err != nil {
				t.Fatal(err)
			}
		}
		s := openAt(t, path)
		storetest.View(t, s, func(tx tine.Tx) error {
			w, err := tx.Workspace("w1")
			if err == nil && (w.UID != uid || w.GID != gid || w.Groups != nil) {
				t.Errorf("workspace owner %d:%d groups %v, want %d:%d and none", w.UID, w.GID, w.Groups, uid, gid)
			}
			return err
		})
	})
	t.Run("TooNew", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "tine.db")
		s, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.write.Exec("PRAGMA user_version = 99"); err != nil {
			t.Fatal(err)
		}
		s.Close()
		_, err = Open(path)
		if !errors.Is(err, tine.ErrUnsupported) || !strings.Contains(err.Error(), "schema version 99") {
			t.Errorf("Open = %v, want ErrUnsupported naming version 99", err)
		}
	})
}

func BenchmarkAppendEvent(b *testing.B) {
	s := openTest(b)
	storetest.Seed(b, s)
	detail := json.RawMessage(`{"reason":"benchmark","n":1}`)
	for b.Loop() {
		err := s.Update(context.Background(), func(tx tine.Tx) error {
			return tx.AppendEvent(&tine.Event{Workspace: "w1", Run: "r1", Kind: "bench", Detail: detail})
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPutRunUpdateRun(b *testing.B) {
	s := openTest(b)
	storetest.Seed(b, s)
	i := 0
	for b.Loop() {
		i++
		r := storetest.TestRun("r"+strconv.Itoa(i), "w1", "n"+strconv.Itoa(i))
		err := s.Update(context.Background(), func(tx tine.Tx) error {
			if err := tx.PutRun(r); err != nil {
				return err
			}
			r.State = tine.StateDiscarded
			return tx.UpdateRun(r)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// The store holds every run's capability secret: the database, its log
// and its shared memory are their owner's alone, whatever the umask, and a
// store made before with 0644 is narrowed at its next open.
func TestOpen_FilesAreTheOwners(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "tine.db")
	check := func(when string) {
		t.Helper()
		for _, p := range []string{path, path + "-wal", path + "-shm"} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
			if m := fi.Mode().Perm(); m != 0o600 {
				t.Errorf("%s: %s has mode %o, want 600", when, filepath.Base(p), m)
			}
		}
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	check("a new store")
	s.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		os.Chmod(p, 0o644)
	}
	if s, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check("an old store reopened")
}

// BenchmarkStoreFork measures the store transactions of one fork on
// SQLite; postgres.BenchmarkStoreFork measures the same on PostgreSQL.
func BenchmarkStoreFork(b *testing.B) {
	storetest.BenchmarkFork(b, func(tb testing.TB) func() engine.StoreFile {
		path := filepath.Join(tb.TempDir(), "tine.db")
		return func() engine.StoreFile { return openAt(tb, path) }
	})
}

// TestRuns_LiveWithoutTheHistory: tine ls reads a workspace's live runs
// (Runs filtered by workspace and state, in order). SQLite answered from
// runs_workspace, reading every run the workspace ever had: tine ls took
// 1.49x as long with 10,000 runs recorded as with 10 (bench/history.sh).
// Migration 6's index lets it read the live ones alone.
func TestRuns_LiveWithoutTheHistory(t *testing.T) {
	s := openTest(t)
	rows, err := s.read.Query("EXPLAIN QUERY PLAN SELECT id FROM runs WHERE workspace = ? AND state = ? ORDER BY created_at, rowid", "w", "active")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(plan, "; "); !strings.Contains(got, "runs_workspace_state (workspace=? AND state=?)") || strings.Contains(got, "TEMP B-TREE") {
		t.Errorf("plan of a workspace's live runs: %s; want a search of runs_workspace_state by workspace and state, in order", got)
	}
}
