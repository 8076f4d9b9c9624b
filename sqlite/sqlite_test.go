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
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tinehq/tine"
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

// update runs fn in an Update and fails t on error.
func update(t testing.TB, s *Store, fn func(tine.Tx) error) {
	t.Helper()
	if err := s.Update(context.Background(), fn); err != nil {
		t.Fatalf("Update: %v", err)
	}
}

// view runs fn in a View and fails t on error.
func view(t testing.TB, s *Store, fn func(tine.Tx) error) {
	t.Helper()
	if err := s.View(context.Background(), fn); err != nil {
		t.Fatalf("View: %v", err)
	}
}

// at returns a fixed time with a nanosecond part, in a zone other than UTC,
// to check that times come back equal and in UTC.
func at(sec int) time.Time {
	return time.Date(2025, 3, 1, 12, 0, sec, 123456789, time.FixedZone("X", 3600))
}

func testWorkspace(id string) *tine.Workspace {
	return &tine.Workspace{ID: id, Name: "name-" + id, Path: "/src/" + id, Backend: "overlay", UID: 1001, GID: 1001, Groups: []int{27, 1003}, CreatedAt: at(0)}
}

func testRun(id, ws, name string) *tine.Run {
	return &tine.Run{
		ID: id, Workspace: ws, Name: name, Parent: "rparent", Role: tine.RoleFork,
		State: tine.StateActive, Base: "vbase", Origin: "vorigin", Group: "g1", Approach: "tabs",
		GitHead: "abc123", Resolution: tine.ResolutionMerged, CreatedAt: at(1), UpdatedAt: at(2),
	}
}

// seed puts workspaces w1 and w2 into s.
func seed(t testing.TB, s *Store) {
	t.Helper()
	update(t, s, func(tx tine.Tx) error {
		return errors.Join(tx.PutWorkspace(testWorkspace("w1")), tx.PutWorkspace(testWorkspace("w2")))
	})
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
	seed(t, openAt(t, path))
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
		seed(t, s)
	})
	t.Run("Reopen", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "tine.db")
		s, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		seed(t, s)
		s.Close()
		s = openAt(t, path)
		if got := userVersion(t, s); got != SchemaVersion() {
			t.Errorf("user_version = %d, want %d", got, SchemaVersion())
		}
		view(t, s, func(tx tine.Tx) error {
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
		seed(t, s)
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
		view(t, s, func(tx tine.Tx) error {
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

func TestTx_RoundTrip(t *testing.T) {
	s := openTest(t)
	seed(t, s)
	tests := []struct {
		name string
		put  func(tine.Tx) error
		get  func(tine.Tx) (any, error)
		want any
	}{
		{"Workspace", nil,
			func(tx tine.Tx) (any, error) { return tx.Workspace("w1") }, testWorkspace("w1")},
		{"WorkspaceByPath", nil,
			func(tx tine.Tx) (any, error) { return tx.WorkspaceByPath("/src/w1") }, testWorkspace("w1")},
		{"WorkspaceByName", nil,
			func(tx tine.Tx) (any, error) { return tx.WorkspaceByName("name-w1") }, testWorkspace("w1")},
		{"Run", func(tx tine.Tx) error { return tx.PutRun(testRun("r1", "w1", "fix-1")) },
			func(tx tine.Tx) (any, error) { return tx.Run("r1") }, testRun("r1", "w1", "fix-1")},
		{"RunByName", nil,
			func(tx tine.Tx) (any, error) { return tx.RunByName("w1", "fix-1") }, testRun("r1", "w1", "fix-1")},
		{"Version", func(tx tine.Tx) error { return tx.PutVersion(testVersion("v1", "l1", "l2")) },
			func(tx tine.Tx) (any, error) { return tx.Version("v1") }, testVersion("v1", "l1", "l2")},
		{"VersionNoLayers", func(tx tine.Tx) error { return tx.PutVersion(testVersion("v2")) },
			func(tx tine.Tx) (any, error) { return tx.Version("v2") }, testVersion("v2")},
		{"Layer", func(tx tine.Tx) error { return tx.PutLayer(testLayer("l1")) },
			func(tx tine.Tx) (any, error) { return tx.Layer("l1") }, testLayer("l1")},
		{"Group", func(tx tine.Tx) error { return tx.PutGroup(testGroup("g1")) },
			func(tx tine.Tx) (any, error) { return tx.Group("g1") }, testGroup("g1")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.put != nil {
				update(t, s, tt.put)
			}
			view(t, s, func(tx tine.Tx) error {
				got, err := tt.get(tx)
				if err != nil {
					return err
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
				checkUTC(t, got)
				return nil
			})
		})
	}
}

func testVersion(id string, layers ...string) *tine.Version {
	if layers == nil {
		layers = []string{}
	}
	return &tine.Version{ID: id, Workspace: "w1", Parent: "v0", Run: "r1", Kind: tine.VersionFork,
		Label: "before refactor", Layers: layers, CreatedAt: at(3)}
}

func testLayer(id string) *tine.Layer {
	return &tine.Layer{ID: id, Workspace: "w1", Bytes: 1 << 40, CreatedAt: at(4)}
}

func testGroup(id string) *tine.Group {
	return &tine.Group{ID: id, Workspace: "w1", Parent: "r1", Version: "v1", CreatedAt: at(5)}
}

// checkUTC fails t unless every time of v, a record read back, is in UTC.
func checkUTC(t *testing.T, v any) {
	t.Helper()
	var ts []time.Time
	switch v := v.(type) {
	case *tine.Workspace:
		ts = []time.Time{v.CreatedAt}
	case *tine.Run:
		ts = []time.Time{v.CreatedAt, v.UpdatedAt}
	case *tine.Version:
		ts = []time.Time{v.CreatedAt}
	case *tine.Layer:
		ts = []time.Time{v.CreatedAt}
	case *tine.Group:
		ts = []time.Time{v.CreatedAt}
	}
	for _, x := range ts {
		if x.Location() != time.UTC {
			t.Errorf("time %v not in UTC", x)
		}
	}
}

func TestTx_PutSetsTimes(t *testing.T) {
	s := openTest(t)
	before := time.Now()
	w := &tine.Workspace{ID: "w1", Name: "w", Path: "/w"}
	r := &tine.Run{ID: "r1", Workspace: "w1", Name: "src", Role: tine.RoleSource, State: stateOther}
	e := &tine.Event{Workspace: "w1", Kind: "created"}
	update(t, s, func(tx tine.Tx) error {
		return errors.Join(tx.PutWorkspace(w), tx.PutRun(r), tx.AppendEvent(e))
	})
	for name, ts := range map[string]time.Time{"workspace": w.CreatedAt, "run": r.CreatedAt, "event": e.Time} {
		if ts.Before(before) || ts.After(time.Now()) {
			t.Errorf("%s time %v not set to now", name, ts)
		}
	}
	if !r.UpdatedAt.Equal(r.CreatedAt) {
		t.Errorf("run UpdatedAt %v, want CreatedAt %v", r.UpdatedAt, r.CreatedAt)
	}
}

func TestTx_NotFound(t *testing.T) {
	s := openTest(t)
	seed(t, s)
	tests := []struct {
		name string
		fn   func(tine.Tx) error
		msg  string
	}{
		{"Workspace", func(tx tine.Tx) error { _, err := tx.Workspace("wx"); return err }, `workspace "wx": not found`},
		{"WorkspaceByPath", func(tx tine.Tx) error { _, err := tx.WorkspaceByPath("/x"); return err }, `workspace path "/x": not found`},
		{"WorkspaceByName", func(tx tine.Tx) error { _, err := tx.WorkspaceByName("x"); return err }, `workspace "x": not found`},
		{"DeleteWorkspace", func(tx tine.Tx) error { return tx.DeleteWorkspace("wx") }, `workspace "wx": not found`},
		{"Run", func(tx tine.Tx) error { _, err := tx.Run("rabc"); return err }, `run "rabc": not found`},
		{"RunByName", func(tx tine.Tx) error { _, err := tx.RunByName("w1", "fix"); return err }, `run "fix": not found`},
		{"RunByNameOtherWorkspace", func(tx tine.Tx) error {
			if err := tx.PutRun(testRun("r1", "w1", "fix")); err != nil {
				return err
			}
			_, err := tx.RunByName("w2", "fix")
			return err
		}, `run "fix": not found`},
		{"UpdateRun", func(tx tine.Tx) error { return tx.UpdateRun(testRun("rx", "w1", "x")) }, `run "rx": not found`},
		{"DeleteRun", func(tx tine.Tx) error { return tx.DeleteRun("rx") }, `run "rx": not found`},
		{"Version", func(tx tine.Tx) error { _, err := tx.Version("vx"); return err }, `version "vx": not found`},
		{"DeleteVersion", func(tx tine.Tx) error { return tx.DeleteVersion("vx") }, `version "vx": not found`},
		{"Layer", func(tx tine.Tx) error { _, err := tx.Layer("lx"); return err }, `layer "lx": not found`},
		{"DeleteLayer", func(tx tine.Tx) error { return tx.DeleteLayer("lx") }, `layer "lx": not found`},
		{"Group", func(tx tine.Tx) error { _, err := tx.Group("gx"); return err }, `group "gx": not found`},
		{"DeleteGroup", func(tx tine.Tx) error { return tx.DeleteGroup("gx") }, `group "gx": not found`},
		{"PutRunNoWorkspace", func(tx tine.Tx) error { return tx.PutRun(testRun("r9", "wx", "a")) }, `workspace "wx": not found`},
		{"PutVersionNoWorkspace", func(tx tine.Tx) error {
			v := testVersion("v9")
			v.Workspace = "wx"
			return tx.PutVersion(v)
		}, `workspace "wx": not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Update(context.Background(), tt.fn)
			if !errors.Is(err, tine.ErrNotFound) || err.Error() != tt.msg {
				t.Errorf("err = %v, want %q wrapping ErrNotFound", err, tt.msg)
			}
		})
	}
}

func TestTx_Exists(t *testing.T) {
	s := openTest(t)
	seed(t, s)
	update(t, s, func(tx tine.Tx) error {
		return errors.Join(tx.PutRun(testRun("r1", "w1", "fix-1")), tx.PutVersion(testVersion("v1")),
			tx.PutLayer(testLayer("l1")), tx.PutGroup(testGroup("g1")))
	})
	ws := func(id, name, path string) *tine.Workspace {
		return &tine.Workspace{ID: id, Name: name, Path: path, Backend: "copy"}
	}
	tests := []struct {
		name string
		fn   func(tine.Tx) error
		msg  string
	}{
		{"WorkspaceID", func(tx tine.Tx) error { return tx.PutWorkspace(ws("w1", "n", "/p")) }, `workspace id "w1"`},
		{"WorkspaceName", func(tx tine.Tx) error { return tx.PutWorkspace(ws("w3", "name-w1", "/p")) }, `workspace name "name-w1"`},
		{"WorkspacePath", func(tx tine.Tx) error { return tx.PutWorkspace(ws("w3", "n", "/src/w2")) }, `workspace path "/src/w2"`},
		{"RunID", func(tx tine.Tx) error { return tx.PutRun(testRun("r1", "w1", "other")) }, `run id "r1"`},
		{"RunName", func(tx tine.Tx) error { return tx.PutRun(testRun("r2", "w1", "fix-1")) }, `run name "fix-1" in workspace "w1"`},
		{"RunRename", func(tx tine.Tx) error {
			if err := tx.PutRun(testRun("r2", "w1", "fix-2")); err != nil {
				return err
			}
			return tx.UpdateRun(testRun("r2", "w1", "fix-1"))
		}, `run name "fix-1" in workspace "w1"`},
		{"Version", func(tx tine.Tx) error { return tx.PutVersion(testVersion("v1")) }, `version id "v1"`},
		{"Layer", func(tx tine.Tx) error { return tx.PutLayer(testLayer("l1")) }, `layer id "l1"`},
		{"Group", func(tx tine.Tx) error { return tx.PutGroup(testGroup("g1")) }, `group id "g1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Update(context.Background(), tt.fn)
			want := tt.msg + ": already exists"
			if !errors.Is(err, tine.ErrExists) || err.Error() != want {
				t.Errorf("err = %v, want %q wrapping ErrExists", err, want)
			}
		})
	}
}

func TestTx_RunNamePerWorkspace(t *testing.T) {
	s := openTest(t)
	seed(t, s)
	update(t, s, func(tx tine.Tx) error {
		return errors.Join(tx.PutRun(testRun("r1", "w1", "fix")), tx.PutRun(testRun("r2", "w2", "fix")))
	})
	view(t, s, func(tx tine.Tx) error {
		for ws, id := range map[string]string{"w1": "r1", "w2": "r2"} {
			r, err := tx.RunByName(ws, "fix")
			if err != nil {
				return err
			}
			if r.ID != id {
				t.Errorf("RunByName(%s, fix) = %s, want %s", ws, r.ID, id)
			}
		}
		return nil
	})
}

func TestTx_UpdateRun(t *testing.T) {
	s := openTest(t)
	seed(t, s)
	update(t, s, func(tx tine.Tx) error { return tx.PutRun(testRun("r1", "w1", "fix")) })
	before := time.Now()
	r := &tine.Run{ID: "r1", Workspace: "w1", Name: "fix-renamed", Role: tine.RoleSource,
		State: tine.StateDiscarded, Base: "v9"}
	update(t, s, func(tx tine.Tx) error { return tx.UpdateRun(r) })
	if r.UpdatedAt.Before(before) || r.UpdatedAt.After(time.Now()) {
		t.Errorf("UpdatedAt = %v, want now", r.UpdatedAt)
	}
	if !r.CreatedAt.Equal(at(1)) {
		t.Errorf("CreatedAt = %v, want the stored %v", r.CreatedAt, at(1))
	}
	view(t, s, func(tx tine.Tx) error {
		got, err := tx.Run("r1")
		if diff := cmp.Diff(r, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		return err
	})
}

func TestTx_Runs(t *testing.T) {
	s := openTest(t)
	seed(t, s)
	mk := func(id, ws, parent, group string, state tine.State, sec int) *tine.Run {
		return &tine.Run{ID: id, Workspace: ws, Name: "n" + id, Parent: parent, Group: group,
			Role: tine.RoleFork, State: state, CreatedAt: at(sec), UpdatedAt: at(sec)}
	}
	// Inserted out of creation order; r3 and r4 share a creation time, so
	// insertion order breaks the tie.
	runs := []*tine.Run{
		mk("r2", "w1", "r1", "g1", tine.StateActive, 2),
		mk("r1", "w1", "", "", tine.StateActive, 1),
		mk("r4", "w1", "r1", "g1", stateOther, 3),
		mk("r3", "w1", "r2", "g2", tine.StateDiscarded, 3),
		mk("r5", "w2", "", "", tine.StateActive, 0),
	}
	update(t, s, func(tx tine.Tx) error {
		var errs []error
		for _, r := range runs {
			errs = append(errs, tx.PutRun(r))
		}
		return errors.Join(errs...)
	})
	tests := []struct {
		name string
		f    tine.RunFilter
		want []string
	}{
		{"All", tine.RunFilter{}, []string{"r5", "r1", "r2", "r4", "r3"}},
		{"Workspace", tine.RunFilter{Workspace: "w1"}, []string{"r1", "r2", "r4", "r3"}},
		{"Parent", tine.RunFilter{Parent: "r1"}, []string{"r2", "r4"}},
		{"Group", tine.RunFilter{Group: "g2"}, []string{"r3"}},
		{"State", tine.RunFilter{State: tine.StateActive}, []string{"r5", "r1", "r2"}},
		{"Combined", tine.RunFilter{Workspace: "w1", Group: "g1", State: stateOther}, []string{"r4"}},
		{"None", tine.RunFilter{Workspace: "w2", Parent: "r1"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			view(t, s, func(tx tine.Tx) error {
				got, err := tx.Runs(tt.f)
				if diff := cmp.Diff(tt.want, ids(got, func(r *tine.Run) string { return r.ID })); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
				return err
			})
		})
	}
}

// ids maps records to their ids.
func ids[T any](xs []*T, id func(*T) string) []string {
	var out []string
	for _, x := range xs {
		out = append(out, id(x))
	}
	return out
}

func TestTx_Lists(t *testing.T) {
	s := openTest(t)
	seed(t, s)
	update(t, s, func(tx tine.Tx) error {
		var errs []error
		for i, id := range []string{"c", "a", "b"} { // same creation time: insertion order
			v, l, g := testVersion("v"+id), testLayer("l"+id), testGroup("g"+id)
			if i == 0 {
				v.CreatedAt, l.CreatedAt, g.CreatedAt = at(9), at(9), at(9)
			}
			errs = append(errs, tx.PutVersion(v), tx.PutLayer(l), tx.PutGroup(g))
		}
		return errors.Join(errs...)
	})
	view(t, s, func(tx tine.Tx) error {
		ws, err1 := tx.Workspaces()
		vs, err2 := tx.Versions("w1")
		ls, err3 := tx.Layers("w1")
		gs, err4 := tx.Groups("w1")
		got := [][]string{
			ids(ws, func(w *tine.Workspace) string { return w.ID }),
			ids(vs, func(v *tine.Version) string { return v.ID }),
			ids(ls, func(l *tine.Layer) string { return l.ID }),
			ids(gs, func(g *tine.Group) string { return g.ID }),
		}
		want := [][]string{{"w1", "w2"}, {"va", "vb", "vc"}, {"la", "lb", "lc"}, {"ga", "gb", "gc"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		return errors.Join(err1, err2, err3, err4)
	})
}

// fill puts one run, version, layer, group and two events into workspace ws.
func fill(tx tine.Tx, ws string) error {
	r := testRun("r"+ws, ws, "fix")
	v, l, g := testVersion("v"+ws), testLayer("l"+ws), testGroup("g"+ws)
	v.Workspace, l.Workspace, g.Workspace = ws, ws, ws
	return errors.Join(tx.PutRun(r), tx.PutVersion(v), tx.PutLayer(l), tx.PutGroup(g),
		tx.AppendEvent(&tine.Event{Workspace: ws, Kind: "a"}),
		tx.AppendEvent(&tine.Event{Workspace: ws, Run: r.ID, Kind: "b"}))
}

// counts returns how many runs, versions, layers, groups and events ws has.
func counts(tx tine.Tx, ws string) ([5]int, error) {
	rs, err1 := tx.Runs(tine.RunFilter{Workspace: ws})
	vs, err2 := tx.Versions(ws)
	ls, err3 := tx.Layers(ws)
	gs, err4 := tx.Groups(ws)
	es, err5 := tx.Events(tine.EventFilter{Workspace: ws})
	return [5]int{len(rs), len(vs), len(ls), len(gs), len(es)}, errors.Join(err1, err2, err3, err4, err5)
}

func TestTx_DeleteWorkspace(t *testing.T) {
	s := openTest(t)
	seed(t, s)
	update(t, s, func(tx tine.Tx) error { return errors.Join(fill(tx, "w1"), fill(tx, "w2")) })
	update(t, s, func(tx tine.Tx) error { return tx.DeleteWorkspace("w1") })
	view(t, s, func(tx tine.Tx) error {
		if _, err := tx.Workspace("w1"); !errors.Is(err, tine.ErrNotFound) {
			t.Errorf("Workspace(w1) after delete: %v, want ErrNotFound", err)
		}
		for ws, want := range map[string][5]int{"w1": {}, "w2": {1, 1, 1, 1, 2}} {
			got, err := counts(tx, ws)
			if err != nil {
				return err
			}
			if got != want {
				t.Errorf("%s: runs, versions, layers, groups, events = %v, want %v", ws, got, want)
			}
		}
		return nil
	})
}

func TestTx_DeleteOne(t *testing.T) {
	s := openTest(t)
	seed(t, s)
	update(t, s, func(tx tine.Tx) error { return fill(tx, "w1") })
	update(t, s, func(tx tine.Tx) error {
		return errors.Join(tx.DeleteRun("rw1"), tx.DeleteVersion("vw1"), tx.DeleteLayer("lw1"), tx.DeleteGroup("gw1"))
	})
	view(t, s, func(tx tine.Tx) error {
		got, err := counts(tx, "w1")
		if want := [5]int{0, 0, 0, 0, 2}; got != want {
			t.Errorf("runs, versions, layers, groups, events = %v, want %v", got, want)
		}
		return err
	})
}

func TestTx_Events(t *testing.T) {
	s := openTest(t)
	seed(t, s)
	var appended []*tine.Event
	update(t, s, func(tx tine.Tx) error {
		for i := range 6 {
			e := &tine.Event{Workspace: []string{"w1", "w2"}[i%2], Run: []string{"", "r1", "r2"}[i%3],
				Kind: tine.EventKind("k" + strconv.Itoa(i)), Detail: json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`)}
			if i == 0 {
				e.Time, e.Detail = at(7), nil
			}
			if err := tx.AppendEvent(e); err != nil {
				return err
			}
			appended = append(appended, e)
		}
		return nil
	})
	for i, e := range appended {
		if i > 0 && e.Seq <= appended[i-1].Seq {
			t.Errorf("Seq %d after %d, want increasing", e.Seq, appended[i-1].Seq)
		}
	}
	if !appended[0].Time.Equal(at(7)) {
		t.Errorf("AppendEvent replaced a set Time: %v", appended[0].Time)
	}
	seqs := func(idx ...int) []int64 {
		var out []int64
		for _, i := range idx {
			out = append(out, appended[i].Seq)
		}
		return out
	}
	tests := []struct {
		name string
		f    tine.EventFilter
		want []int64
	}{
		{"All", tine.EventFilter{}, seqs(0, 1, 2, 3, 4, 5)},
		{"Workspace", tine.EventFilter{Workspace: "w2"}, seqs(1, 3, 5)},
		{"Run", tine.EventFilter{Run: "r1"}, seqs(1, 4)},
		{"After", tine.EventFilter{After: appended[2].Seq}, seqs(3, 4, 5)},
		{"Limit", tine.EventFilter{Limit: 2}, seqs(0, 1)},
		{"AfterLimit", tine.EventFilter{After: appended[1].Seq, Limit: 3}, seqs(2, 3, 4)},
		{"Combined", tine.EventFilter{Workspace: "w1", Run: "r2", After: appended[0].Seq}, seqs(2)},
		{"PastEnd", tine.EventFilter{After: appended[5].Seq}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			view(t, s, func(tx tine.Tx) error {
				got, err := tx.Events(tt.f)
				var gotSeqs []int64
				for _, e := range got {
					gotSeqs = append(gotSeqs, e.Seq)
				}
				if diff := cmp.Diff(tt.want, gotSeqs); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
				return err
			})
		})
	}
	t.Run("RoundTrip", func(t *testing.T) {
		view(t, s, func(tx tine.Tx) error {
			got, err := tx.Events(tine.EventFilter{})
			if diff := cmp.Diff(appended, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			return err
		})
	})
}

func TestTx_EventSeqNotReused(t *testing.T) {
	s := openTest(t)
	seed(t, s)
	e1 := &tine.Event{Workspace: "w1", Kind: "a"}
	update(t, s, func(tx tine.Tx) error { return tx.AppendEvent(e1) })
	update(t, s, func(tx tine.Tx) error { return tx.DeleteWorkspace("w1") })
	e2 := &tine.Event{Workspace: "w2", Kind: "b"}
	update(t, s, func(tx tine.Tx) error { return tx.AppendEvent(e2) })
	if e2.Seq <= e1.Seq {
		t.Errorf("Seq %d reused after delete (first was %d)", e2.Seq, e1.Seq)
	}
}

func TestTx_EventBadDetail(t *testing.T) {
	s := openTest(t)
	err := s.Update(context.Background(), func(tx tine.Tx) error {
		return tx.AppendEvent(&tine.Event{Kind: "x", Detail: json.RawMessage("{nope")})
	})
	if !errors.Is(err, tine.ErrInvalid) {
		t.Errorf("err = %v, want ErrInvalid", err)
	}
}

func TestStore_Rollback(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name string
		fail func() error
	}{
		{"Error", func() error { return errBoom }},
		{"Panic", func() error { panic(errBoom) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTest(t)
			err := func() (err error) {
				defer func() {
					if p := recover(); p != nil {
						err = p.(error)
					}
				}()
				return s.Update(context.Background(), func(tx tine.Tx) error {
					if err := tx.PutWorkspace(testWorkspace("w1")); err != nil {
						return err
					}
					return tt.fail()
				})
			}()
			if !errors.Is(err, errBoom) {
				t.Fatalf("Update = %v, want boom", err)
			}
			view(t, s, func(tx tine.Tx) error {
				if _, err := tx.Workspace("w1"); !errors.Is(err, tine.ErrNotFound) {
					t.Errorf("Workspace after rollback: %v, want ErrNotFound", err)
				}
				return nil
			})
			seed(t, s) // the write connection is free again
		})
	}
}

func TestStore_ViewReadOnly(t *testing.T) {
	s := openTest(t)
	err := s.View(context.Background(), func(tx tine.Tx) error {
		return tx.PutWorkspace(testWorkspace("w1"))
	})
	if err == nil {
		t.Fatal("PutWorkspace inside View succeeded")
	}
	view(t, s, func(tx tine.Tx) error {
		if _, err := tx.Workspace("w1"); !errors.Is(err, tine.ErrNotFound) {
			t.Errorf("Workspace: %v, want ErrNotFound", err)
		}
		return nil
	})
}

// TestStore_ConcurrentWriters has two stores on one file, standing for two
// processes, increment a counter from many goroutines. Every Update must
// succeed and none may be lost, which holds only if writers serialize.
func TestStore_ConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tine.db")
	stores := []*Store{openAt(t, path), openAt(t, path)}
	seed(t, stores[0])
	update(t, stores[0], func(tx tine.Tx) error {
		r := testRun("r1", "w1", "counter")
		r.Approach = "0"
		return tx.PutRun(r)
	})
	const goroutines, loops = 8, 25
	var wg sync.WaitGroup
	for g := range goroutines {
		s := stores[g%len(stores)]
		wg.Go(func() {
			for range loops {
				if err := s.Update(context.Background(), increment); err != nil {
					t.Errorf("Update: %v", err)
					return
				}
				if err := s.View(context.Background(), readCounter); err != nil {
					t.Errorf("View: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	view(t, stores[1], func(tx tine.Tx) error {
		r, err := tx.Run("r1")
		if err == nil && r.Approach != strconv.Itoa(goroutines*loops) {
			t.Errorf("counter = %s, want %d", r.Approach, goroutines*loops)
		}
		es, _ := tx.Events(tine.EventFilter{})
		if len(es) != goroutines*loops {
			t.Errorf("%d events, want %d", len(es), goroutines*loops)
		}
		return err
	})
}

// increment adds one to run r1's counter, kept in its Approach, and logs it.
func increment(tx tine.Tx) error {
	r, err := tx.Run("r1")
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(r.Approach)
	if err != nil {
		return err
	}
	r.Approach = strconv.Itoa(n + 1)
	if err := tx.UpdateRun(r); err != nil {
		return err
	}
	return tx.AppendEvent(&tine.Event{Workspace: "w1", Run: "r1", Kind: "increment"})
}

// readCounter reads run r1.
func readCounter(tx tine.Tx) error {
	_, err := tx.Run("r1")
	return err
}

func BenchmarkAppendEvent(b *testing.B) {
	s := openTest(b)
	seed(b, s)
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
	seed(b, s)
	i := 0
	for b.Loop() {
		i++
		r := testRun("r"+strconv.Itoa(i), "w1", "n"+strconv.Itoa(i))
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

// stateOther is a third state, so that filters on state are tested on more
// than two values; the store does not interpret states.
const stateOther tine.State = "other"

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
