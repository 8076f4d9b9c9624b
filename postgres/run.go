package postgres

import (
	"errors"

	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/tinehq/tine"
)

const runCols = "id, workspace, name, parent, role, state, base, origin, grp, approach, " +
	"git_head, resolution, proc, addr, created_at, updated_at"

// scanRun reads a row of runCols.
func scanRun(s scanner) (*tine.Run, error) {
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

// runKeys are the uniqueness constraints of runs, for error messages.
func runKeys(r *tine.Run) keys {
	return keys{
		"runs_id":   fmt.Sprintf("run id %q", r.ID),
		"runs_name": fmt.Sprintf("run name %q in workspace %q", r.Name, r.Workspace),
	}
}

// PutRun inserts r, setting its CreatedAt to now if zero and its UpdatedAt
// to CreatedAt if zero. It wraps tine.ErrNotFound if r's workspace does not
// exist.
func (t *tx) PutRun(r *tine.Run) error {
	t.stamp(&r.CreatedAt)
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = r.CreatedAt
	}
	return t.insert("run", r.Workspace, runKeys(r),
		"INSERT INTO runs ("+runCols+") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
		r.ID, r.Workspace, r.Name, r.Parent, r.Role, r.State, r.Base, r.Origin, r.Group,
		r.Approach, r.GitHead, r.Resolution, r.Proc, r.Addr, unixNano(r.CreatedAt), unixNano(r.UpdatedAt))
}

// UpdateRun rewrites every field of the run with r's id except CreatedAt,
// which it reads back into r, and sets UpdatedAt to now.
func (t *tx) UpdateRun(r *tine.Run) error {
	updated := t.now()
	var created int64
	err := t.tx.QueryRow(t.ctx, `UPDATE runs SET workspace = $1, name = $2, parent = $3,
		role = $4, state = $5, base = $6, origin = $7, grp = $8, approach = $9, git_head = $10,
		resolution = $11, proc = $12, addr = $13, updated_at = $14 WHERE id = $15 RETURNING created_at`,
		r.Workspace, r.Name, r.Parent, r.Role, r.State, r.Base, r.Origin, r.Group, r.Approach,
		r.GitHead, r.Resolution, r.Proc, r.Addr, unixNano(updated), r.ID).Scan(&created)
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound("run", r.ID)
	}
	if err != nil {
		return writeErr(err, "run", r.Workspace, keys{"runs_name": runKeys(r)["runs_name"]})
	}
	r.CreatedAt, r.UpdatedAt = fromUnixNano(created), updated
	return nil
}

// Run returns the run with the given id.
func (t *tx) Run(id string) (*tine.Run, error) {
	return get(t, scanRun, "run", id, "SELECT "+runCols+" FROM runs WHERE id = $1", id)
}

// RunByName returns the run called name in workspace ws.
func (t *tx) RunByName(ws, name string) (*tine.Run, error) {
	return get(t, scanRun, "run", name,
		"SELECT "+runCols+" FROM runs WHERE workspace = $1 AND name = $2", ws, name)
}

// Runs lists the runs that match f in creation order.
func (t *tx) Runs(f tine.RunFilter) ([]*tine.Run, error) {
	var w filter
	w.eq("workspace", f.Workspace)
	w.eq("parent", f.Parent)
	w.eq("grp", f.Group)
	w.eq("state", string(f.State))
	return list(t, scanRun, "runs",
		"SELECT "+runCols+" FROM runs"+w.String()+" ORDER BY created_at, ord", w.args...)
}

// DeleteRun removes the run row with the given id, and with it the run's
// capability and nonces.
func (t *tx) DeleteRun(id string) error {
	return t.del("runs", "run", id)
}
