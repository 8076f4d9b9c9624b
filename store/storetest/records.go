package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
)

func testRoundTrip(t *testing.T, open func() engine.StoreFile) {
	s := open()
	Seed(t, s)
	tests := []struct {
		name string
		put  func(tine.Tx) error
		get  func(tine.Tx) (any, error)
		want any
	}{
		{"Workspace", nil,
			func(tx tine.Tx) (any, error) { return tx.Workspace("w1") }, TestWorkspace("w1")},
		{"WorkspaceByPath", nil,
			func(tx tine.Tx) (any, error) { return tx.WorkspaceByPath("/src/w1") }, TestWorkspace("w1")},
		{"WorkspaceByName", nil,
			func(tx tine.Tx) (any, error) { return tx.WorkspaceByName("name-w1") }, TestWorkspace("w1")},
		{"Run", func(tx tine.Tx) error { return tx.PutRun(TestRun("r1", "w1", "fix-1")) },
			func(tx tine.Tx) (any, error) { return tx.Run("r1") }, TestRun("r1", "w1", "fix-1")},
		{"RunByName", nil,
			func(tx tine.Tx) (any, error) { return tx.RunByName("w1", "fix-1") }, TestRun("r1", "w1", "fix-1")},
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
				Update(t, s, tt.put)
			}
			View(t, s, func(tx tine.Tx) error {
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

func testPutSetsTimes(t *testing.T, open func() engine.StoreFile) {
	s := open()
	before := time.Now()
	w := &tine.Workspace{ID: "w1", Name: "w", Path: "/w"}
	r := &tine.Run{ID: "r1", Workspace: "w1", Name: "src", Role: tine.RoleSource, State: stateOther}
	e := &tine.Event{Workspace: "w1", Kind: tine.EventInit}
	Update(t, s, func(tx tine.Tx) error {
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

func testNotFound(t *testing.T, open func() engine.StoreFile) {
	s := open()
	Seed(t, s)
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
			if err := tx.PutRun(TestRun("r1", "w1", "fix")); err != nil {
				return err
			}
			_, err := tx.RunByName("w2", "fix")
			return err
		}, `run "fix": not found`},
		{"UpdateRun", func(tx tine.Tx) error { return tx.UpdateRun(TestRun("rx", "w1", "x")) }, `run "rx": not found`},
		{"DeleteRun", func(tx tine.Tx) error { return tx.DeleteRun("rx") }, `run "rx": not found`},
		{"Version", func(tx tine.Tx) error { _, err := tx.Version("vx"); return err }, `version "vx": not found`},
		{"DeleteVersion", func(tx tine.Tx) error { return tx.DeleteVersion("vx") }, `version "vx": not found`},
		{"Layer", func(tx tine.Tx) error { _, err := tx.Layer("lx"); return err }, `layer "lx": not found`},
		{"DeleteLayer", func(tx tine.Tx) error { return tx.DeleteLayer("lx") }, `layer "lx": not found`},
		{"Group", func(tx tine.Tx) error { _, err := tx.Group("gx"); return err }, `group "gx": not found`},
		{"DeleteGroup", func(tx tine.Tx) error { return tx.DeleteGroup("gx") }, `group "gx": not found`},
		{"PutRunNoWorkspace", func(tx tine.Tx) error { return tx.PutRun(TestRun("r9", "wx", "a")) }, `workspace "wx": not found`},
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

func testExists(t *testing.T, open func() engine.StoreFile) {
	s := open()
	Seed(t, s)
	Update(t, s, func(tx tine.Tx) error {
		return errors.Join(tx.PutRun(TestRun("r1", "w1", "fix-1")), tx.PutVersion(testVersion("v1")),
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
		{"RunID", func(tx tine.Tx) error { return tx.PutRun(TestRun("r1", "w1", "other")) }, `run id "r1"`},
		{"RunName", func(tx tine.Tx) error { return tx.PutRun(TestRun("r2", "w1", "fix-1")) }, `run name "fix-1" in workspace "w1"`},
		{"RunRename", func(tx tine.Tx) error {
			if err := tx.PutRun(TestRun("r2", "w1", "fix-2")); err != nil {
				return err
			}
			return tx.UpdateRun(TestRun("r2", "w1", "fix-1"))
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

func testRunNamePerWorkspace(t *testing.T, open func() engine.StoreFile) {
	s := open()
	Seed(t, s)
	Update(t, s, func(tx tine.Tx) error {
		return errors.Join(tx.PutRun(TestRun("r1", "w1", "fix")), tx.PutRun(TestRun("r2", "w2", "fix")))
	})
	View(t, s, func(tx tine.Tx) error {
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

func testUpdateRun(t *testing.T, open func() engine.StoreFile) {
	s := open()
	Seed(t, s)
	Update(t, s, func(tx tine.Tx) error { return tx.PutRun(TestRun("r1", "w1", "fix")) })
	before := time.Now()
	r := &tine.Run{ID: "r1", Workspace: "w1", Name: "fix-renamed", Role: tine.RoleSource,
		State: tine.StateDiscarded, Base: "v9"}
	Update(t, s, func(tx tine.Tx) error { return tx.UpdateRun(r) })
	if r.UpdatedAt.Before(before) || r.UpdatedAt.After(time.Now()) {
		t.Errorf("UpdatedAt = %v, want now", r.UpdatedAt)
	}
	if !r.CreatedAt.Equal(At(1)) {
		t.Errorf("CreatedAt = %v, want the stored %v", r.CreatedAt, At(1))
	}
	View(t, s, func(tx tine.Tx) error {
		got, err := tx.Run("r1")
		if diff := cmp.Diff(r, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		return err
	})
}

func testRuns(t *testing.T, open func() engine.StoreFile) {
	s := open()
	Seed(t, s)
	mk := func(id, ws, parent, group string, state tine.State, sec int) *tine.Run {
		return &tine.Run{ID: id, Workspace: ws, Name: "n" + id, Parent: parent, Group: group,
			Role: tine.RoleFork, State: state, CreatedAt: At(sec), UpdatedAt: At(sec)}
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
	Update(t, s, func(tx tine.Tx) error {
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
			View(t, s, func(tx tine.Tx) error {
				got, err := tx.Runs(tt.f)
				if diff := cmp.Diff(tt.want, ids(got, func(r *tine.Run) string { return r.ID })); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
				return err
			})
		})
	}
}

func testLists(t *testing.T, open func() engine.StoreFile) {
	s := open()
	Seed(t, s)
	Update(t, s, func(tx tine.Tx) error {
		var errs []error
		for i, id := range []string{"c", "a", "b"} { // same creation time: insertion order
			v, l, g := testVersion("v"+id), testLayer("l"+id), testGroup("g"+id)
			if i == 0 {
				v.CreatedAt, l.CreatedAt, g.CreatedAt = At(9), At(9), At(9)
			}
			errs = append(errs, tx.PutVersion(v), tx.PutLayer(l), tx.PutGroup(g))
		}
		return errors.Join(errs...)
	})
	View(t, s, func(tx tine.Tx) error {
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
	r := TestRun("r"+ws, ws, "fix")
	v, l, g := testVersion("v"+ws), testLayer("l"+ws), testGroup("g"+ws)
	v.Workspace, l.Workspace, g.Workspace = ws, ws, ws
	return errors.Join(tx.PutRun(r), tx.PutVersion(v), tx.PutLayer(l), tx.PutGroup(g),
		tx.AppendEvent(&tine.Event{Workspace: ws, Kind: tine.EventFork}),
		tx.AppendEvent(&tine.Event{Workspace: ws, Run: r.ID, Kind: tine.EventMerge}))
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

func testDeleteWorkspace(t *testing.T, open func() engine.StoreFile) {
	s := open()
	Seed(t, s)
	Update(t, s, func(tx tine.Tx) error { return errors.Join(fill(tx, "w1"), fill(tx, "w2")) })
	Update(t, s, func(tx tine.Tx) error { return tx.DeleteWorkspace("w1") })
	View(t, s, func(tx tine.Tx) error {
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

func testDeleteOne(t *testing.T, open func() engine.StoreFile) {
	s := open()
	Seed(t, s)
	Update(t, s, func(tx tine.Tx) error { return fill(tx, "w1") })
	Update(t, s, func(tx tine.Tx) error {
		return errors.Join(tx.DeleteRun("rw1"), tx.DeleteVersion("vw1"), tx.DeleteLayer("lw1"), tx.DeleteGroup("gw1"))
	})
	View(t, s, func(tx tine.Tx) error {
		got, err := counts(tx, "w1")
		if want := [5]int{0, 0, 0, 0, 2}; got != want {
			t.Errorf("runs, versions, layers, groups, events = %v, want %v", got, want)
		}
		return err
	})
}

func testEvents(t *testing.T, open func() engine.StoreFile) {
	s := open()
	Seed(t, s)
	var appended []*tine.Event
	Update(t, s, func(tx tine.Tx) error {
		for i := range 6 {
			e := &tine.Event{Workspace: []string{"w1", "w2"}[i%2], Run: []string{"", "r1", "r2"}[i%3],
				Kind: tine.EventKind("k" + strconv.Itoa(i)), Detail: json.RawMessage(`{"i":` + strconv.Itoa(i) + `}`)}
			if i == 0 {
				e.Time, e.Detail = At(7), nil
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
	if !appended[0].Time.Equal(At(7)) {
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
			View(t, s, func(tx tine.Tx) error {
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
		View(t, s, func(tx tine.Tx) error {
			got, err := tx.Events(tine.EventFilter{})
			if diff := cmp.Diff(appended, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			return err
		})
	})
}

func testEventSeqNotReused(t *testing.T, open func() engine.StoreFile) {
	s := open()
	Seed(t, s)
	e1 := &tine.Event{Workspace: "w1", Kind: tine.EventFork}
	Update(t, s, func(tx tine.Tx) error { return tx.AppendEvent(e1) })
	Update(t, s, func(tx tine.Tx) error { return tx.DeleteWorkspace("w1") })
	e2 := &tine.Event{Workspace: "w2", Kind: tine.EventMerge}
	Update(t, s, func(tx tine.Tx) error { return tx.AppendEvent(e2) })
	if e2.Seq <= e1.Seq {
		t.Errorf("Seq %d reused after delete (first was %d)", e2.Seq, e1.Seq)
	}
}

func testEventBadDetail(t *testing.T, open func() engine.StoreFile) {
	s := open()
	err := s.Update(context.Background(), func(tx tine.Tx) error {
		return tx.AppendEvent(&tine.Event{Kind: tine.EventSaved, Detail: json.RawMessage("{nope")})
	})
	if !errors.Is(err, tine.ErrInvalid) {
		t.Errorf("err = %v, want ErrInvalid", err)
	}
}

func testRollback(t *testing.T, open func() engine.StoreFile) {
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
			s := open()
			err := func() (err error) {
				defer func() {
					if p := recover(); p != nil {
						err = p.(error)
					}
				}()
				return s.Update(context.Background(), func(tx tine.Tx) error {
					if err := tx.PutWorkspace(TestWorkspace("w1")); err != nil {
						return err
					}
					return tt.fail()
				})
			}()
			if !errors.Is(err, errBoom) {
				t.Fatalf("Update = %v, want boom", err)
			}
			View(t, s, func(tx tine.Tx) error {
				if _, err := tx.Workspace("w1"); !errors.Is(err, tine.ErrNotFound) {
					t.Errorf("Workspace after rollback: %v, want ErrNotFound", err)
				}
				return nil
			})
			// The writer is free again.
			Update(t, s, func(tx tine.Tx) error { return tx.PutWorkspace(TestWorkspace("w-" + tt.name)) })
		})
	}
}

func testViewReadOnly(t *testing.T, open func() engine.StoreFile) {
	s := open()
	err := s.View(context.Background(), func(tx tine.Tx) error {
		return tx.PutWorkspace(TestWorkspace("w1"))
	})
	if err == nil {
		t.Fatal("PutWorkspace inside View succeeded")
	}
	View(t, s, func(tx tine.Tx) error {
		if _, err := tx.Workspace("w1"); !errors.Is(err, tine.ErrNotFound) {
			t.Errorf("Workspace: %v, want ErrNotFound", err)
		}
		return nil
	})
}
