package approval

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/sqlite"
)

// t0 is the time approvals are requested at in the tests.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// openStore opens a store holding workspaces w1 and w2.
func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "tine.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	err = st.Update(context.Background(), func(tx tine.Tx) error {
		return errors.Join(tx.PutWorkspace(&tine.Workspace{ID: "w1", Name: "w1", Path: "/w1"}),
			tx.PutWorkspace(&tine.Workspace{ID: "w2", Name: "w2", Path: "/w2"}))
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// offer requests an approval to merge run r1 of w1, with fingerprint fp,
// expiring after ten minutes.
func offer(t *testing.T, st tine.Store) *tine.Approval {
	t.Helper()
	a := &tine.Approval{Workspace: "w1", Run: "r1", Action: tine.ActionMerge, Fingerprint: "fp",
		Args: json.RawMessage(`{"into":"r0"}`), Evidence: json.RawMessage(`{"tests":"pass"}`),
		RequestedBy: "r1", ExpiresAt: t0.Add(10 * time.Minute)}
	if err := Request(context.Background(), st, a, t0); err != nil {
		t.Fatal(err)
	}
	return a
}

// stateOf reads approval id's state.
func stateOf(t *testing.T, st tine.Store, id string) tine.ApprovalState {
	t.Helper()
	var a *tine.Approval
	err := st.View(context.Background(), func(tx tine.Tx) (err error) {
		a, err = tx.Approval(id)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return a.State
}

func TestConsume(t *testing.T) {
	ctx := context.Background()
	approve := func(t *testing.T, st tine.Store, id string) {
		if _, err := Approve(ctx, st, id, "alice", t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	type call struct {
		action         tine.Action
		run, group, fp string
		at             time.Duration // after t0
	}
	good := call{tine.ActionMerge, "r1", "", "fp", 2 * time.Minute}
	tests := []struct {
		name   string
		before func(t *testing.T, st tine.Store, id string)
		call   call
		want   error
		state  tine.ApprovalState // afterwards
	}{
		{"Approved", approve, good, nil, tine.ApprovalConsumed},
		{"Twice", func(t *testing.T, st tine.Store, id string) {
			approve(t, st, id)
			if _, err := Consume(ctx, st, id, tine.ActionMerge, "r1", "", "fp", t0.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
		}, good, ErrUsed, tine.ApprovalConsumed},
		{"Pending", nil, good, ErrNotApproved, tine.ApprovalPending},
		{"Refused", func(t *testing.T, st tine.Store, id string) {
			if _, err := Refuse(ctx, st, id, "bob", t0.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
		}, good, ErrNotApproved, tine.ApprovalRefused},
		{"Expired", approve, call{tine.ActionMerge, "r1", "", "fp", 10 * time.Minute}, ErrExpired, tine.ApprovalExpired},
		{"Stale", approve, call{tine.ActionMerge, "r1", "", "fp2", 2 * time.Minute}, ErrStale, tine.ApprovalApproved},
		{"OtherAction", approve, call{tine.ActionDiscard, "r1", "", "fp", 2 * time.Minute}, ErrMismatch, tine.ApprovalApproved},
		{"OtherRun", approve, call{tine.ActionMerge, "r2", "", "fp", 2 * time.Minute}, ErrMismatch, tine.ApprovalApproved},
		{"OtherGroup", approve, call{tine.ActionMerge, "r1", "g1", "fp", 2 * time.Minute}, ErrMismatch, tine.ApprovalApproved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := openStore(t)
			a := offer(t, st)
			if tt.before != nil {
				tt.before(t, st, a.ID)
			}
			c := tt.call
			got, err := Consume(ctx, st, a.ID, c.action, c.run, c.group, c.fp, t0.Add(c.at))
			t.Logf("Consume: %v", err)
			if tt.want == nil && err != nil || !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if tt.want == nil && got.State != tine.ApprovalConsumed {
				t.Errorf("returned state %s, want consumed", got.State)
			}
			if s := stateOf(t, st, a.ID); s != tt.state {
				t.Errorf("stored state %s, want %s", s, tt.state)
			}
		})
	}
}

func TestConsume_StaleAfterStateChange(t *testing.T) {
	ctx := context.Background()
	run := &tine.Run{ID: "r1", Workspace: "w1", Parent: "r0", Role: tine.RoleFork, State: tine.StateActive, Base: "v1"}
	st := openStore(t)
	a := &tine.Approval{Workspace: "w1", Run: "r1", Action: tine.ActionMerge, Fingerprint: Fingerprint(run, "ready")}
	if err := Request(ctx, st, a, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := Approve(ctx, st, a.ID, "alice", t0); err != nil {
		t.Fatal(err)
	}
	run.Base = "v2" // rolled back after the approval was offered
	_, err := Consume(ctx, st, a.ID, tine.ActionMerge, "r1", "", Fingerprint(run, "ready"), t0)
	if !errors.Is(err, ErrStale) || !errors.Is(err, tine.ErrState) {
		t.Errorf("err = %v, want ErrStale wrapping tine.ErrState", err)
	}
}

func TestConsume_OnceUnderContention(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	a := offer(t, st)
	if _, err := Approve(ctx, st, a.ID, "alice", t0); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = Consume(ctx, st, a.ID, tine.ActionMerge, "r1", "", "fp", t0.Add(time.Minute))
		})
	}
	wg.Wait()
	ok, used := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrUsed):
			used++
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if ok != 1 || used != n-1 {
		t.Errorf("%d consumed, %d refused as used; want 1 and %d", ok, used, n-1)
	}
}

func TestDecide(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		before func(st tine.Store, id string) error
		decide func(st tine.Store, id string) (*tine.Approval, error)
		want   error
		state  tine.ApprovalState
	}{
		{"Approve", nil, approveAt(time.Minute), nil, tine.ApprovalApproved},
		{"ApproveTwice", ignore(approveAt(time.Minute)), approveAt(time.Minute), ErrUsed, tine.ApprovalApproved},
		{"ApproveExpired", nil, approveAt(10 * time.Minute), ErrExpired, tine.ApprovalExpired},
		{"ApproveRefused", ignore(refuseAt(time.Minute)), approveAt(time.Minute), ErrNotApproved, tine.ApprovalRefused},
		{"ApproveNobody", nil, func(st tine.Store, id string) (*tine.Approval, error) {
			return Approve(ctx, st, id, "", t0)
		}, tine.ErrInvalid, tine.ApprovalPending},
		{"ApproveUnknown", nil, func(st tine.Store, _ string) (*tine.Approval, error) {
			return Approve(ctx, st, "axxxxxxxx", "alice", t0)
		}, tine.ErrNotFound, tine.ApprovalPending},
		{"Refuse", nil, refuseAt(time.Minute), nil, tine.ApprovalRefused},
		{"RefuseApproved", ignore(approveAt(time.Minute)), refuseAt(2 * time.Minute), nil, tine.ApprovalRefused},
		{"RefuseConsumed", func(st tine.Store, id string) error {
			_, err1 := approveAt(time.Minute)(st, id)
			_, err2 := Consume(ctx, st, id, tine.ActionMerge, "r1", "", "fp", t0.Add(time.Minute))
			return errors.Join(err1, err2)
		}, refuseAt(2 * time.Minute), ErrUsed, tine.ApprovalConsumed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := openStore(t)
			a := offer(t, st)
			if tt.before != nil {
				if err := tt.before(st, a.ID); err != nil {
					t.Fatal(err)
				}
			}
			_, err := tt.decide(st, a.ID)
			if tt.want == nil && err != nil || !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if s := stateOf(t, st, a.ID); s != tt.state {
				t.Errorf("stored state %s, want %s", s, tt.state)
			}
		})
	}
}

func approveAt(d time.Duration) func(tine.Store, string) (*tine.Approval, error) {
	return func(st tine.Store, id string) (*tine.Approval, error) {
		return Approve(context.Background(), st, id, "alice", t0.Add(d))
	}
}

func refuseAt(d time.Duration) func(tine.Store, string) (*tine.Approval, error) {
	return func(st tine.Store, id string) (*tine.Approval, error) {
		return Refuse(context.Background(), st, id, "bob", t0.Add(d))
	}
}

// ignore drops the approval a decision returns.
func ignore(fn func(tine.Store, string) (*tine.Approval, error)) func(tine.Store, string) error {
	return func(st tine.Store, id string) error { _, err := fn(st, id); return err }
}

func TestRequest_Invalid(t *testing.T) {
	valid := func() *tine.Approval {
		return &tine.Approval{Workspace: "w1", Run: "r1", Action: tine.ActionMerge, Fingerprint: "fp"}
	}
	tests := []struct {
		name   string
		change func(a *tine.Approval)
		want   error
	}{
		{"Valid", func(*tine.Approval) {}, nil},
		{"GroupOnly", func(a *tine.Approval) { a.Run, a.Group, a.Action = "", "g1", tine.ActionChoose }, nil},
		{"NoApprovalNeeded", func(a *tine.Approval) { a.Action = tine.ActionInspect }, tine.ErrInvalid},
		{"UnknownAction", func(a *tine.Approval) { a.Action = "" }, tine.ErrInvalid},
		{"NoWorkspace", func(a *tine.Approval) { a.Workspace = "" }, tine.ErrInvalid},
		{"NoSubject", func(a *tine.Approval) { a.Run = "" }, tine.ErrInvalid},
		{"NoFingerprint", func(a *tine.Approval) { a.Fingerprint = "" }, tine.ErrInvalid},
		{"ExpiresAlready", func(a *tine.Approval) { a.ExpiresAt = t0 }, tine.ErrInvalid},
		{"UnknownWorkspace", func(a *tine.Approval) { a.Workspace = "wx" }, tine.ErrNotFound},
		{"BadEvidence", func(a *tine.Approval) { a.Evidence = json.RawMessage("{") }, tine.ErrInvalid},
	}
	st := openStore(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := valid()
			tt.change(a)
			err := Request(context.Background(), st, a, t0)
			if tt.want == nil && err != nil || !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if err == nil && (!tine.LooksLikeID(tine.PrefixApproval, a.ID) || !a.ExpiresAt.Equal(t0.Add(DefaultTTL))) {
				t.Errorf("requested %+v: want a new id and the default expiry", a)
			}
		})
	}
}

func TestPending(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	mk := func(ws, run string, ttl time.Duration) string {
		a := &tine.Approval{Workspace: ws, Run: run, Action: tine.ActionDiscard, Fingerprint: "fp", ExpiresAt: t0.Add(ttl)}
		if err := Request(ctx, st, a, t0); err != nil {
			t.Fatal(err)
		}
		return a.ID
	}
	waiting, short, decided, other := mk("w1", "r1", time.Hour), mk("w1", "r2", time.Minute),
		mk("w1", "r3", time.Hour), mk("w2", "r4", time.Hour)
	if _, err := Approve(ctx, st, decided, "alice", t0); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		ws   string
		at   time.Duration
		want []string
	}{
		{"Workspace", "w1", 0, []string{waiting, short}},
		{"AllWorkspaces", "", 0, []string{waiting, short, other}},
		{"AfterExpiry", "w1", time.Minute, []string{waiting}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Pending(ctx, st, tt.ws, t0.Add(tt.at))
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, a := range got {
				ids = append(ids, a.ID)
			}
			if diff := cmp.Diff(tt.want, ids); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSweep(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	pending, approved, fresh := offer(t, st), offer(t, st), &tine.Approval{Workspace: "w1", Run: "r1",
		Action: tine.ActionMerge, Fingerprint: "fp", ExpiresAt: t0.Add(time.Hour)}
	if err := Request(ctx, st, fresh, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := Approve(ctx, st, approved.ID, "alice", t0); err != nil {
		t.Fatal(err)
	}
	n, err := Sweep(ctx, st, t0.Add(10*time.Minute))
	if err != nil || n != 2 {
		t.Errorf("Sweep = %d, %v; want 2", n, err)
	}
	for id, want := range map[string]tine.ApprovalState{pending.ID: tine.ApprovalExpired,
		approved.ID: tine.ApprovalExpired, fresh.ID: tine.ApprovalPending} {
		if s := stateOf(t, st, id); s != want {
			t.Errorf("%s: state %s, want %s", id, s, want)
		}
	}
}

func TestEvents(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	a := offer(t, st)
	_, err1 := Approve(ctx, st, a.ID, "alice", t0)
	_, err2 := Consume(ctx, st, a.ID, tine.ActionMerge, "r1", "", "fp", t0)
	_, err3 := Consume(ctx, st, a.ID, tine.ActionMerge, "r1", "", "fp", t0) // refused: no event
	if err := errors.Join(err1, err2); err != nil || !errors.Is(err3, ErrUsed) {
		t.Fatalf("errors %v, %v", err, err3)
	}
	var kinds []tine.EventKind
	err := st.View(ctx, func(tx tine.Tx) error {
		evs, err := tx.Events(tine.EventFilter{Run: "r1"})
		for _, e := range evs {
			kinds = append(kinds, e.Kind)
		}
		return err
	})
	want := []tine.EventKind{tine.EventApprovalPending, tine.EventApprovalApproved, tine.EventApprovalConsumed}
	if diff := cmp.Diff(want, kinds); err != nil || diff != "" {
		t.Errorf("events %v (-want +got):\n%s", err, diff)
	}
}
