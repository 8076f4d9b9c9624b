package sqltx

import (
	"database/sql"
	"errors"
	"fmt"

	"github.com/tinehq/tine"
)

const runCols = "id, workspace, name, parent, role, state, base, origin, grp, approach, " +
	"git_head, resolution, proc, addr, created_at, updated_at"

// scanRun reads a row of runCols.
func scanRun(s Row) (*tine.Run, error) {
	var r tine.Run
	var created, updated int64
	err := s.Scan(&r.ID, &r.Workspace, &r.Name, &r.Parent, &r.Role, &r.State, &r.Base, &r.Origin,
		&r.Group, &r.Approach, &r.GitHead, &r.Resolution, &r.Proc, &r.Addr, &created, &updated)
	if err != nil {
		return nil, err
	}
	r.CreatedAt, r.UpdatedAt = fromUnixNano(created), fromUnixNano(updated)
	return &r, nil
}

// runNameKey is the uniqueness of a run's name in its workspace.
func runNameKey(r *tine.Run) uniqueKey {
	return uniqueKey{"runs_name", fmt.Sprintf("run name %q in workspace %q", r.Name, r.Workspace),
		"workspace = ? AND name = ? AND id <> ?", []any{r.Workspace, r.Name, r.ID}}
}

// PutRun inserts r, setting its CreatedAt to now if zero and its UpdatedAt
// to CreatedAt if zero. It wraps tine.ErrNotFound if r's workspace does not
// exist.
func (t *Tx) PutRun(r *tine.Run) error {
	t.stamp(&r.CreatedAt)
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.CreatedAt
	}
	keys := []uniqueKey{idKey("runs", "run", r.ID), runNameKey(r)}
	return t.insert("run", "runs", r.Workspace, keys,
		"INSERT INTO runs ("+runCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		r.ID, r.Workspace, r.Name, r.Parent, r.Role, r.State, r.Base, r.Origin, r.Group,
		r.Approach, r.GitHead, r.Resolution, r.Proc, r.Addr, unixNano(r.CreatedAt), unixNano(r.UpdatedAt))
}

// UpdateRun rewrites every field of the run with r's id except CreatedAt,
// which it reads back into r, and sets UpdatedAt to now.
func (t *Tx) UpdateRun(r *tine.Run) error {
	updated := t.now()
	var created int64
	err := t.db.QueryRow(t.ctx, `UPDATE runs SET workspace = ?, name = ?, parent = ?,
		role = ?, state = ?, base = ?, origin = ?, grp = ?, approach = ?, git_head = ?,
		resolution = ?, proc = ?, addr = ?, updated_at = ? WHERE id = ? RETURNING created_at`,
		r.Workspace, r.Name, r.Parent, r.Role, r.State, r.Base, r.Origin, r.Group, r.Approach,
		r.GitHead, r.Resolution, r.Proc, r.Addr, unixNano(updated), r.ID).Scan(&created)
	if errors.Is(err, sql.ErrNoRows) {
		return NotFound("run", r.ID)
	}
	if err != nil {
		return t.writeErr(err, "run", "runs", r.Workspace, []uniqueKey{runNameKey(r)})
	}
	r.CreatedAt, r.UpdatedAt = fromUnixNano(created), updated
	return nil
}

// Run returns the run with the given id.
func (t *Tx) Run(id string) (*tine.Run, error) {
	return get(t, scanRun, "run", id, "SELECT "+runCols+" FROM runs WHERE id = ?", id)
}

// RunByName returns the run called name in workspace ws.
func (t *Tx) RunByName(ws, name string) (*tine.Run, error) {
	return get(t, scanRun, "run", name,
		"SELECT "+runCols+" FROM runs WHERE workspace = ? AND name = ?", ws, name)
}

// Runs lists the runs that match f in creation order.
func (t *Tx) Runs(f tine.RunFilter) ([]*tine.Run, error) {
	var w filter
	w.eq("workspace", f.Workspace)
	w.eq("parent", f.Parent)
	w.eq("grp", f.Group)
	w.eq("state", string(f.State))
	return list(t, scanRun, "runs", "SELECT "+runCols+" FROM runs"+w.String()+t.inOrder(), w.args...)
}

// DeleteRun removes the run row with the given id, and with it the run's
// capability and nonces.
func (t *Tx) DeleteRun(id string) error {
	return t.del("runs", "run", id)
}
