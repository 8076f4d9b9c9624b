package sqlite

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tinehq/tine"
)

func testApproval(id, ws, run, group string, state tine.ApprovalState, sec int) *tine.Approval {
	return &tine.Approval{
		ID: id, Workspace: ws, Run: run, Group: group, Action: tine.ActionMerge,
		Args: json.RawMessage(`{"into":"r0"}`), Evidence: json.RawMessage(`{"tests":"pass"}`),
		State: state, Fingerprint: "fp", RequestedBy: run, CreatedAt: at(sec), ExpiresAt: at(sec + 30),
	}
}

// approvalOf reads approval id from s.
func approvalOf(t *testing.T, s *Store, id string) *tine.Approval {
	t.Helper()
	var a *tine.Approval
	view(t, s, func(tx tine.Tx) error {
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

func TestTx_ApprovalRoundTrip(t *testing.T) {
	s := openTest(t)
	seed(t, s)
	bare := testApproval("a2", "w1", "", "g1", tine.ApprovalPending, 1)
	bare.Args, bare.Evidence = nil, nil
	decided := testApproval("a3", "w1", "r1", "", tine.ApprovalApproved, 1)
	decided.DecidedAt, decided.DecidedBy = at(5), "alice"
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
			update(t, s, func(tx tine.Tx) error { return tx.PutApproval(tt.a) })
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

func TestTx_UpdateApproval(t *testing.T) {
	s := openTest(t)
	seed(t, s)
	a := testApproval("a1", "w1", "r1", "", tine.ApprovalPending, 1)
	update(t, s, func(tx tine.Tx) error { return tx.PutApproval(a) })
	changed := *a
	changed.State, changed.DecidedAt, changed.DecidedBy = tine.ApprovalApproved, at(3), "bob"
	changed.Action, changed.Fingerprint = tine.ActionDiscard, "other" // fixed fields: ignored
	update(t, s, func(tx tine.Tx) error { return tx.UpdateApproval(&changed) })
	want := utc(a)
	want.State, want.DecidedAt, want.DecidedBy = tine.ApprovalApproved, at(3).UTC(), "bob"
	if diff := cmp.Diff(want, approvalOf(t, s, "a1")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestTx_ApprovalErrors(t *testing.T) {
	s := openTest(t)
	seed(t, s)
	update(t, s, func(tx tine.Tx) error {
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

func TestTx_Approvals(t *testing.T) {
	s := openTest(t)
	seed(t, s)
	all := []*tine.Approval{
		testApproval("a2", "w1", "r2", "g1", tine.ApprovalApproved, 2),
		testApproval("a1", "w1", "r1", "", tine.ApprovalPending, 1),
		testApproval("a3", "w1", "r1", "g1", tine.ApprovalPending, 2),
		testApproval("a4", "w2", "r9", "", tine.ApprovalPending, 0),
	}
	update(t, s, func(tx tine.Tx) error {
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
			view(t, s, func(tx tine.Tx) error {
				got, err := tx.Approvals(tt.f)
				if diff := cmp.Diff(tt.want, ids(got, func(a *tine.Approval) string { return a.ID })); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
				return err
			})
		})
	}
}

func TestTx_ApprovalsGoWithWorkspace(t *testing.T) {
	s := openTest(t)
	seed(t, s)
	update(t, s, func(tx tine.Tx) error {
		return errors.Join(tx.PutApproval(testApproval("a1", "w1", "r1", "", tine.ApprovalPending, 1)),
			tx.PutApproval(testApproval("a2", "w2", "r2", "", tine.ApprovalPending, 1)))
	})
	update(t, s, func(tx tine.Tx) error { return tx.DeleteWorkspace("w1") })
	view(t, s, func(tx tine.Tx) error {
		got, err := tx.Approvals(tine.ApprovalFilter{})
		if diff := cmp.Diff([]string{"a2"}, ids(got, func(a *tine.Approval) string { return a.ID })); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		return err
	})
}
