package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
)

// capabilityOf reads run's capability from s.
func capabilityOf(t *testing.T, s tine.Store, run string) *tine.Capability {
	t.Helper()
	var c *tine.Capability
	View(t, s, func(tx tine.Tx) error {
		var err error
		c, err = tx.Capability(run)
		return err
	})
	return c
}

func testSetCapability(t *testing.T, open func() engine.StoreFile) {
	s := open()
	seedRuns(t, s)
	steps := []struct {
		name    string
		fn      func(tine.Tx) error
		gen     int
		secret  []byte
		revoked bool
	}{
		{"First", setCap("r1", "s1", At(1)), 1, []byte("s1"), false},
		{"Replace", setCap("r1", "s2", At(2)), 2, []byte("s2"), false},
		{"Revoke", func(tx tine.Tx) error { return tx.RevokeCapability("r1") }, 2, nil, true},
		{"ReissueAfterRevoke", setCap("r1", "s3", At(3)), 3, []byte("s3"), false},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			Update(t, s, st.fn)
			c := capabilityOf(t, s, "r1")
			if c.Generation != st.gen || c.Revoked != st.revoked || !bytes.Equal(c.Secret, st.secret) {
				t.Errorf("got gen %d revoked %v secret %q, want %d %v %q",
					c.Generation, c.Revoked, c.Secret, st.gen, st.revoked, st.secret)
			}
			if c.IssuedAt.Location() != time.UTC {
				t.Errorf("IssuedAt %v not in UTC", c.IssuedAt)
			}
		})
	}
}

// setCap returns an update that sets run's capability to secret.
func setCap(run, secret string, issued time.Time) func(tine.Tx) error {
	return func(tx tine.Tx) error {
		return tx.SetCapability(&tine.Capability{Run: run, Secret: []byte(secret), IssuedAt: issued})
	}
}

func testSetCapabilitySetsFields(t *testing.T, open func() engine.StoreFile) {
	s := open()
	seedRuns(t, s)
	c := &tine.Capability{Run: "r1", Secret: []byte("x"), Generation: 9, Revoked: true}
	before := time.Now()
	Update(t, s, func(tx tine.Tx) error { return tx.SetCapability(c) })
	if c.Generation != 1 || c.Revoked || c.IssuedAt.Before(before) || c.IssuedAt.After(time.Now()) {
		t.Errorf("after SetCapability: %+v, want generation 1, not revoked, issued now", c)
	}
}

func testCapabilityErrors(t *testing.T, open func() engine.StoreFile) {
	s := open()
	seedRuns(t, s)
	tests := []struct {
		name string
		fn   func(tine.Tx) error
		want error
		msg  string
	}{
		{"Missing", func(tx tine.Tx) error { _, err := tx.Capability("r1"); return err },
			tine.ErrNotFound, `capability of run "r1": not found`},
		{"RevokeMissing", func(tx tine.Tx) error { return tx.RevokeCapability("r1") },
			tine.ErrNotFound, `capability of run "r1": not found`},
		{"SetNoRun", setCap("rx", "s", At(1)), tine.ErrNotFound, `run "rx": not found`},
		{"SetEmptySecret", setCap("r1", "", At(1)), tine.ErrInvalid,
			`set capability of run "r1": empty secret: invalid argument`},
		{"NonceNoRun", func(tx tine.Tx) error { _, err := tx.SeeNonce("rx", "n", At(1), At(2)); return err },
			tine.ErrNotFound, `run "rx": not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Update(context.Background(), tt.fn)
			if !errors.Is(err, tt.want) || err.Error() != tt.msg {
				t.Errorf("err = %v, want %q wrapping %v", err, tt.msg, tt.want)
			}
		})
	}
}

func testSeeNonce(t *testing.T, open func() engine.StoreFile) {
	s := open()
	seedRuns(t, s)
	steps := []struct {
		name       string
		run, nonce string
		now, until time.Time
		seen       bool
	}{
		{"First", "r1", "n1", At(0), At(10), false},
		{"Replay", "r1", "n1", At(5), At(15), true},
		{"OtherRun", "r2", "n1", At(5), At(15), false},
		{"OtherNonce", "r1", "n2", At(5), At(15), false},
		{"ReplayAtExpiry", "r1", "n1", At(10), At(20), true},
		{"AfterExpiryForgotten", "r1", "n1", At(11), At(21), false},
		{"ReplayAfterReRecord", "r1", "n1", At(12), At(22), true},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			Update(t, s, func(tx tine.Tx) error {
				seen, err := tx.SeeNonce(st.run, st.nonce, st.now, st.until)
				if seen != st.seen {
					t.Errorf("SeeNonce(%s, %s) = %v, want %v", st.run, st.nonce, seen, st.seen)
				}
				return err
			})
		})
	}
}

func testSeeNoncePrunes(t *testing.T, open func() engine.StoreFile) {
	s := open()
	seedRuns(t, s)
	Update(t, s, func(tx tine.Tx) error {
		_, err1 := tx.SeeNonce("r1", "old", At(0), At(1))
		_, err2 := tx.SeeNonce("r2", "new", At(0), At(9))
		_, err3 := tx.SeeNonce("r1", "now", At(5), At(9))
		return errors.Join(err1, err2, err3)
	})
	// "old" expired at 1 and was forgotten at 5; the others are remembered.
	for _, c := range []struct {
		run, nonce string
		seen       bool
	}{{"r1", "old", false}, {"r2", "new", true}, {"r1", "now", true}} {
		Update(t, s, func(tx tine.Tx) error {
			seen, err := tx.SeeNonce(c.run, c.nonce, At(6), At(7))
			if seen != c.seen {
				t.Errorf("SeeNonce(%s, %s) after pruning = %v, want %v", c.run, c.nonce, seen, c.seen)
			}
			return err
		})
	}
}

func testCapabilityCascades(t *testing.T, open func() engine.StoreFile) {
	s := open()
	seedRuns(t, s)
	Update(t, s, func(tx tine.Tx) error {
		_, err := tx.SeeNonce("r1", "n", At(0), At(9))
		return errors.Join(setCap("r1", "s", At(0))(tx), setCap("r2", "s", At(0))(tx), err)
	})
	Update(t, s, func(tx tine.Tx) error { return tx.DeleteRun("r2") })
	if c := capabilityOf(t, s, "r1"); c == nil {
		t.Fatal("r1 lost its capability when r2 was deleted")
	}
	Update(t, s, func(tx tine.Tx) error { return tx.DeleteWorkspace("w1") })
	// The same ids again: nothing of the old runs' may come back.
	Update(t, s, func(tx tine.Tx) error {
		return errors.Join(tx.PutWorkspace(TestWorkspace("w1")), tx.PutRun(TestRun("r1", "w1", "a")))
	})
	err := s.View(context.Background(), func(tx tine.Tx) error {
		_, err := tx.Capability("r1")
		return err
	})
	if !errors.Is(err, tine.ErrNotFound) {
		t.Errorf("capability of a deleted run's id: %v, want ErrNotFound", err)
	}
	Update(t, s, func(tx tine.Tx) error {
		seen, err := tx.SeeNonce("r1", "n", At(1), At(9))
		if seen {
			t.Error("a deleted run's nonce is remembered for a new run of its id")
		}
		return err
	})
}

func testApproval(id, ws, run, group string, state tine.ApprovalState, sec int) *tine.Approval {
	return &tine.Approval{
		ID: id, Workspace: ws, Run: run, Group: group, Action: tine.ActionMerge,
		Args: json.RawMessage(`{"into":"r0"}`), Evidence: json.RawMessage(`{"tests":"pass"}`),
		State: state, Fingerprint: "fp", RequestedBy: run, CreatedAt: At(sec), ExpiresAt: At(sec + 30),
	}
}

// approvalOf reads approval id from s.
func approvalOf(t *testing.T, s tine.Store, id string) *tine.Approval {
	t.Helper()
	var a *tine.Approval
	View(t, s, func(tx tine.Tx) error {
		var err error
		a, err = tx.Approval(id)
		return err
	})
	return a
}

// utc returns a's times in UTC, as they come back from the store.
func utc(a *tine.Approval) *tine.Approval {
	b := *a
	b.CreatedAt, b.ExpiresAt = b.CreatedAt.UTC(), b.ExpiresAt.UTC()
	if !b.DecidedAt.IsZero() {
		b.DecidedAt = b.DecidedAt.UTC()
	}
	return &b
}

func testApprovalRoundTrip(t *testing.T, open func() engine.StoreFile) {
	s := open()
	Seed(t, s)
	bare := testApproval("a2", "w1", "", "g1", tine.ApprovalPending, 1)
	bare.Args, bare.Evidence = nil, nil
	decided := testApproval("a3", "w1", "r1", "", tine.ApprovalApproved, 1)
	decided.DecidedAt, decided.DecidedBy = At(5), "alice"
	tests := []struct {
		name string
		a    *tine.Approval
	}{
		{"Full", testApproval("a1", "w1", "r1", "g1", tine.ApprovalPending, 1)},
		{"NoJSON", bare},
		{"Decided", decided},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			Update(t, s, func(tx tine.Tx) error { return tx.PutApproval(tt.a) })
			got := approvalOf(t, s, tt.a.ID)
			if diff := cmp.Diff(utc(tt.a), got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if got.CreatedAt.Location() != time.UTC || got.ExpiresAt.Location() != time.UTC {
				t.Errorf("times not in UTC: %v %v", got.CreatedAt, got.ExpiresAt)
			}
		})
	}
}

func testUpdateApproval(t *testing.T, open func() engine.StoreFile) {
	s := open()
	Seed(t, s)
	a := testApproval("a1", "w1", "r1", "", tine.ApprovalPending, 1)
	Update(t, s, func(tx tine.Tx) error { return tx.PutApproval(a) })
	changed := *a
	changed.State, changed.DecidedAt, changed.DecidedBy = tine.ApprovalApproved, At(3), "bob"
	changed.Action, changed.Fingerprint = tine.ActionDiscard, "other" // fixed fields: ignored
	Update(t, s, func(tx tine.Tx) error { return tx.UpdateApproval(&changed) })
	want := utc(a)
	want.State, want.DecidedAt, want.DecidedBy = tine.ApprovalApproved, At(3).UTC(), "bob"
	if diff := cmp.Diff(want, approvalOf(t, s, "a1")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func testApprovalErrors(t *testing.T, open func() engine.StoreFile) {
	s := open()
	Seed(t, s)
	Update(t, s, func(tx tine.Tx) error {
		return tx.PutApproval(testApproval("a1", "w1", "r1", "", tine.ApprovalPending, 1))
	})
	badJSON := testApproval("a9", "w1", "r1", "", tine.ApprovalPending, 1)
	badJSON.Evidence = json.RawMessage(`{`)
	tests := []struct {
		name string
		fn   func(tine.Tx) error
		want error
		msg  string
	}{
		{"Get", func(tx tine.Tx) error { _, err := tx.Approval("ax"); return err },
			tine.ErrNotFound, `approval "ax": not found`},
		{"Update", func(tx tine.Tx) error { return tx.UpdateApproval(&tine.Approval{ID: "ax"}) },
			tine.ErrNotFound, `approval "ax": not found`},
		{"NoWorkspace", func(tx tine.Tx) error {
			return tx.PutApproval(testApproval("a2", "wx", "r1", "", tine.ApprovalPending, 1))
		}, tine.ErrNotFound, `workspace "wx": not found`},
		{"Exists", func(tx tine.Tx) error {
			return tx.PutApproval(testApproval("a1", "w1", "r2", "", tine.ApprovalPending, 1))
		}, tine.ErrExists, `approval id "a1": already exists`},
		{"BadJSON", func(tx tine.Tx) error { return tx.PutApproval(badJSON) },
			tine.ErrInvalid, `put approval "a9": evidence is not JSON: invalid argument`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Update(context.Background(), tt.fn)
			if !errors.Is(err, tt.want) || err.Error() != tt.msg {
				t.Errorf("err = %v, want %q wrapping %v", err, tt.msg, tt.want)
			}
		})
	}
}

func testApprovals(t *testing.T, open func() engine.StoreFile) {
	s := open()
	Seed(t, s)
	all := []*tine.Approval{
		testApproval("a2", "w1", "r2", "g1", tine.ApprovalApproved, 2),
		testApproval("a1", "w1", "r1", "", tine.ApprovalPending, 1),
		testApproval("a3", "w1", "r1", "g1", tine.ApprovalPending, 2),
		testApproval("a4", "w2", "r9", "", tine.ApprovalPending, 0),
	}
	Update(t, s, func(tx tine.Tx) error {
		var errs []error
		for _, a := range all {
			errs = append(errs, tx.PutApproval(a))
		}
		return errors.Join(errs...)
	})
	tests := []struct {
		name string
		f    tine.ApprovalFilter
		want []string
	}{
		{"All", tine.ApprovalFilter{}, []string{"a4", "a1", "a2", "a3"}},
		{"Workspace", tine.ApprovalFilter{Workspace: "w1"}, []string{"a1", "a2", "a3"}},
		{"Run", tine.ApprovalFilter{Run: "r1"}, []string{"a1", "a3"}},
		{"Group", tine.ApprovalFilter{Group: "g1"}, []string{"a2", "a3"}},
		{"State", tine.ApprovalFilter{Workspace: "w1", State: tine.ApprovalPending}, []string{"a1", "a3"}},
		{"None", tine.ApprovalFilter{Workspace: "w2", State: tine.ApprovalApproved}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			View(t, s, func(tx tine.Tx) error {
				got, err := tx.Approvals(tt.f)
				if diff := cmp.Diff(tt.want, ids(got, func(a *tine.Approval) string { return a.ID })); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
				return err
			})
		})
	}
}

func testApprovalsGoWithWorkspace(t *testing.T, open func() engine.StoreFile) {
	s := open()
	Seed(t, s)
	Update(t, s, func(tx tine.Tx) error {
		return errors.Join(tx.PutApproval(testApproval("a1", "w1", "r1", "", tine.ApprovalPending, 1)),
			tx.PutApproval(testApproval("a2", "w2", "r2", "", tine.ApprovalPending, 1)))
	})
	Update(t, s, func(tx tine.Tx) error { return tx.DeleteWorkspace("w1") })
	View(t, s, func(tx tine.Tx) error {
		got, err := tx.Approvals(tine.ApprovalFilter{})
		if diff := cmp.Diff([]string{"a2"}, ids(got, func(a *tine.Approval) string { return a.ID })); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		return err
	})
}
