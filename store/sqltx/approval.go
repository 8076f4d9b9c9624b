package sqltx

import (
	"encoding/json"
	"fmt"

	"github.com/tinehq/tine"
)

const approvalCols = "id, workspace, run, grp, action, args, evidence, state, fingerprint, " +
	"requested_by, created_at, expires_at, decided_at, decided_by"

// jsonCol encodes an optional JSON column: NULL when empty.
func jsonCol(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// scanApproval reads a row of approvalCols.
func scanApproval(s Row) (*tine.Approval, error) {
	var a tine.Approval
	var args, evidence []byte
	var created, expires, decided int64
	err := s.Scan(&a.ID, &a.Workspace, &a.Run, &a.Group, &a.Action, &args, &evidence, &a.State,
		&a.Fingerprint, &a.RequestedBy, &created, &expires, &decided, &a.DecidedBy)
	if err != nil {
		return nil, err
	}
	if args != nil {
		a.Args = json.RawMessage(args)
	}
	if evidence != nil {
		a.Evidence = json.RawMessage(evidence)
	}
	a.CreatedAt, a.ExpiresAt, a.DecidedAt = fromUnixNano(created), fromOptNano(expires), fromOptNano(decided)
	return &a, nil
}

// PutApproval inserts a, setting its CreatedAt to now if zero. It wraps
// tine.ErrNotFound if a's workspace does not exist and tine.ErrInvalid if
// Args or Evidence is not JSON.
func (t *Tx) PutApproval(a *tine.Approval) error {
	for _, c := range []struct {
		name string
		b    json.RawMessage
	}{{"args", a.Args}, {"evidence", a.Evidence}} {
		if len(c.b) > 0 && !json.Valid(c.b) {
			return fmt.Errorf("put approval %q: %s is not JSON: %w", a.ID, c.name, tine.ErrInvalid)
		}
	}
	t.stamp(&a.CreatedAt)
	return t.insert("approval", "approvals", a.Workspace, []uniqueKey{idKey("approvals", "approval", a.ID)},
		"INSERT INTO approvals ("+approvalCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		a.ID, a.Workspace, a.Run, a.Group, a.Action, jsonCol(a.Args), jsonCol(a.Evidence), a.State,
		a.Fingerprint, a.RequestedBy, unixNano(a.CreatedAt), optNano(a.ExpiresAt),
		optNano(a.DecidedAt), a.DecidedBy)
}

// Approval returns the approval with the given id.
func (t *Tx) Approval(id string) (*tine.Approval, error) {
	return get(t, scanApproval, "approval", id,
		"SELECT "+approvalCols+" FROM approvals WHERE id = ?", id)
}

// UpdateApproval rewrites the decision of the approval with a's id: its
// State, DecidedAt and DecidedBy.
func (t *Tx) UpdateApproval(a *tine.Approval) error {
	n, err := t.db.Exec(t.ctx, "UPDATE approvals SET state = ?, decided_at = ?, decided_by = ? WHERE id = ?",
		a.State, optNano(a.DecidedAt), a.DecidedBy, a.ID)
	if err != nil {
		return fmt.Errorf("update approval %q: %w", a.ID, err)
	}
	return affected(n, "approval", a.ID)
}

// Approvals lists the approvals that match f in creation order.
func (t *Tx) Approvals(f tine.ApprovalFilter) ([]*tine.Approval, error) {
	var w filter
	w.eq("workspace", f.Workspace)
	w.eq("run", f.Run)
	w.eq("grp", f.Group)
	w.eq("state", string(f.State))
	return list(t, scanApproval, "approvals",
		"SELECT "+approvalCols+" FROM approvals"+w.String()+t.inOrder(), w.args...)
}
