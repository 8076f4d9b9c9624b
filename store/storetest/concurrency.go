package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
)

// testConcurrentWriters has two handles on one store, standing for two
// processes, increment a counter from many goroutines. Every Update must
// succeed and none may be lost, which holds only if writers serialize.
func testConcurrentWriters(t *testing.T, open func() engine.StoreFile) {
	stores := []tine.Store{open(), open()}
	Seed(t, stores[0])
	Update(t, stores[0], func(tx tine.Tx) error {
		r := TestRun("r1", "w1", "counter")
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
	View(t, stores[1], func(tx tine.Tx) error {
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
	return tx.AppendEvent(&tine.Event{Workspace: "w1", Run: "r1", Kind: tine.EventCheckpoint})
}

// readCounter reads run r1.
func readCounter(tx tine.Tx) error {
	_, err := tx.Run("r1")
	return err
}

// testEventsInCommitOrder has writers on two handles append events in
// transactions that take a while to commit, while a follower pages through
// the log with After, as tine events --follow and the dashboard do. The
// follower must see every event: a store that numbered events in the
// order transactions began, not the order they committed, would let a
// late commit land behind the follower's After, and lose it.
func testEventsInCommitOrder(t *testing.T, open func() engine.StoreFile) {
	stores := []tine.Store{open(), open()}
	const writers, loops = 4, 15
	var wg sync.WaitGroup
	for g := range writers {
		s := stores[g%len(stores)]
		wg.Go(func() {
			for i := range loops {
				err := s.Update(context.Background(), func(tx tine.Tx) error {
					if err := tx.AppendEvent(&tine.Event{Kind: tine.EventKind(fmt.Sprintf("w%d.%d", g, i))}); err != nil {
						return err
					}
					time.Sleep(time.Duration(rand.IntN(2000)) * time.Microsecond) // commit later
					return nil
				})
				if err != nil {
					t.Errorf("Update: %v", err)
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var seen []int64
	follow := func() {
		View(t, stores[1], func(tx tine.Tx) error {
			f := tine.EventFilter{}
			if len(seen) > 0 {
				f.After = seen[len(seen)-1]
			}
			evs, err := tx.Events(f)
			for _, e := range evs {
				seen = append(seen, e.Seq)
			}
			return err
		})
	}
	for following := true; following; {
		select {
		case <-done:
			following = false
		default:
			time.Sleep(200 * time.Microsecond)
		}
		follow()
	}
	var want []int64
	View(t, stores[0], func(tx tine.Tx) error {
		evs, err := tx.Events(tine.EventFilter{})
		for _, e := range evs {
			want = append(want, e.Seq)
		}
		return err
	})
	if len(want) != writers*loops {
		t.Fatalf("%d events in the log, want %d", len(want), writers*loops)
	}
	if !slices.Equal(seen, want) {
		missed := slices.DeleteFunc(slices.Clone(want), func(s int64) bool { return slices.Contains(seen, s) })
		t.Errorf("the follower saw %d of %d events; it missed %v", len(seen), len(want), missed)
	}
}

// testViewSnapshot checks that a View sees one snapshot: a commit made
// while it runs does not show in its later reads.
func testViewSnapshot(t *testing.T, open func() engine.StoreFile) {
	reader, writer := open(), open()
	Seed(t, writer)
	View(t, reader, func(tx tine.Tx) error {
		before, err := tx.Workspaces()
		if err != nil {
			return err
		}
		Update(t, writer, func(tx tine.Tx) error { return tx.PutWorkspace(TestWorkspace("w3")) })
		after, err := tx.Workspaces()
		if len(after) != len(before) {
			t.Errorf("a View saw %d workspaces, then %d after another's commit; want one snapshot", len(before), len(after))
		}
		return err
	})
}

// forkDetail is the detail of the parent's "forked" event, as the engine
// records it.
type forkDetail struct {
	Request string   `json:"request,omitempty"`
	Group   string   `json:"group"`
	Version string   `json:"version"`
	Forks   []string `json:"forks"`
}

// forkTx records, in one transaction, a fork of run parent of workspace
// w1 into n runs made for request, as engine.Fork does: the sealed layer,
// the version, the group, the parent's new base, each fork's run and
// event, and the parent's "forked" event naming the request. Unless the
// request already landed (landed reports it): then it records nothing, as
// a retried request must. fail, if not nil, is returned after every write.
func forkTx(id, parent, request string, n int, fail error, landed *bool) func(tine.Tx) error {
	return func(tx tine.Tx) error {
		if request != "" {
			d, err := findFork(tx, parent, request)
			if err != nil {
				return err
			}
			if *landed = d != nil; *landed {
				return nil
			}
		}
		l := &tine.Layer{ID: "l" + id, Workspace: "w1", Bytes: 4096}
		v := &tine.Version{ID: "v" + id, Workspace: "w1", Parent: "v0", Run: parent, Kind: tine.VersionFork, Layers: []string{"l0", l.ID}}
		g := &tine.Group{ID: "g" + id, Workspace: "w1", Parent: parent, Version: v.ID}
		if err := errors.Join(tx.PutLayer(l), tx.PutVersion(v), tx.PutGroup(g)); err != nil {
			return err
		}
		p, err := tx.Run(parent)
		if err != nil {
			return err
		}
		p.Base = v.ID
		if err := tx.UpdateRun(p); err != nil {
			return err
		}
		d := forkDetail{Request: request, Group: g.ID, Version: v.ID}
		for i := range n {
			f := &tine.Run{ID: fmt.Sprintf("r%s.%d", id, i), Workspace: "w1", Name: fmt.Sprintf("%s-%d", id, i),
				Parent: parent, Role: tine.RoleFork, State: tine.StateActive, Base: v.ID, Origin: v.ID, Group: g.ID}
			if err := tx.PutRun(f); err != nil {
				return err
			}
			detail, _ := json.Marshal(map[string]string{"parent": parent, "version": v.ID, "group": g.ID})
			if err := tx.AppendEvent(&tine.Event{Workspace: "w1", Run: f.ID, Kind: tine.EventFork, Detail: detail}); err != nil {
				return err
			}
			d.Forks = append(d.Forks, f.ID)
		}
		detail, _ := json.Marshal(d)
		if err := tx.AppendEvent(&tine.Event{Workspace: "w1", Run: parent, Kind: tine.EventForked, Detail: detail}); err != nil {
			return err
		}
		return fail
	}
}

// findFork returns the fork of parent made for request, as
// engine.ForkLanded finds it, or nil.
func findFork(tx tine.Tx, parent, request string) (*forkDetail, error) {
	evs, err := tx.Events(tine.EventFilter{Run: parent})
	if err != nil {
		return nil, err
	}
	for _, ev := range evs {
		var d forkDetail
		if ev.Kind == tine.EventForked && json.Unmarshal(ev.Detail, &d) == nil && d.Request == request {
			return &d, nil
		}
	}
	return nil, nil
}

// testForkRequestKey checks what a fork's request key relies on: a fork's
// records commit together or not at all, a committed fork is found by its
// request key with everything it made, and a request retried from two
// processes at once lands once.
func testForkRequestKey(t *testing.T, open func() engine.StoreFile) {
	s := open()
	Seed(t, s)
	Update(t, s, func(tx tine.Tx) error { return tx.PutRun(TestRun("r1", "w1", "source")) })
	errBoom := errors.New("boom")
	var landed bool
	if err := s.Update(context.Background(), forkTx("a", "r1", "req-a", 3, errBoom, &landed)); !errors.Is(err, errBoom) {
		t.Fatalf("failing fork: %v, want boom", err)
	}
	View(t, s, func(tx tine.Tx) error {
		d, err := findFork(tx, "r1", "req-a")
		if d != nil {
			t.Error("a fork whose transaction failed is found by its request key")
		}
		runs, _ := tx.Runs(tine.RunFilter{Parent: "r1"})
		if len(runs) != 0 {
			t.Errorf("a failed fork left %d runs", len(runs))
		}
		return err
	})
	// Two processes retry one request at once: one records it.
	stores := []tine.Store{s, open()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	made := 0
	for i, st := range stores {
		wg.Go(func() {
			var landed bool
			err := st.Update(context.Background(), forkTx("b"+strconv.Itoa(i), "r1", "req-b", 2, nil, &landed))
			if err != nil {
				t.Errorf("fork from handle %d: %v", i, err)
			}
			if !landed {
				mu.Lock()
				made++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if made != 1 {
		t.Errorf("a request retried from two handles at once made %d forks, want 1", made)
	}
	View(t, s, func(tx tine.Tx) error {
		d, err := findFork(tx, "r1", "req-b")
		if err != nil || d == nil {
			t.Fatalf("fork of req-b not found: %v", err)
		}
		if _, err := tx.Group(d.Group); err != nil {
			return err
		}
		if _, err := tx.Version(d.Version); err != nil {
			return err
		}
		runs, err := tx.Runs(tine.RunFilter{Group: d.Group})
		if diff := cmp.Diff(d.Forks, ids(runs, func(r *tine.Run) string { return r.ID })); diff != "" {
			t.Errorf("forks of req-b (-recorded +runs):\n%s", diff)
		}
		return err
	})
}

// testID checks the store's identity: kept across handles, its own per
// store, replaced by SetID, and a sound store passes Check.
func testID(t *testing.T, fresh Fresh) {
	ctx := context.Background()
	open := fresh(t)
	s := open()
	id, created, err := s.ID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(id) < 10 || id[0] != 's' {
		t.Errorf("id = %q", id)
	}
	if d := time.Since(created); d < 0 || d > time.Minute {
		t.Errorf("created_at = %v, %v ago", created, d)
	}
	if id2, _, _ := open().ID(ctx); id2 != id {
		t.Errorf("another handle's id = %q, want %q", id2, id)
	}
	if id3, _, _ := fresh(t)().ID(ctx); id3 == id {
		t.Errorf("two stores share id %q", id)
	}
	if err := s.Check(ctx); err != nil {
		t.Errorf("Check on a sound store: %v", err)
	}
	when := time.Date(2024, 5, 6, 7, 8, 9, 10, time.UTC)
	if err := s.SetID(ctx, "sother", when); err != nil {
		t.Fatal(err)
	}
	if got, c, err := open().ID(ctx); got != "sother" || !c.Equal(when) || err != nil {
		t.Errorf("after SetID: %q %v %v, want sother %v", got, c, err, when)
	}
	if err := s.SetID(ctx, "", when); !errors.Is(err, tine.ErrInvalid) {
		t.Errorf("SetID with an empty id: %v, want ErrInvalid", err)
	}
}
