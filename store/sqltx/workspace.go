package sqltx

import (
	"fmt"

	"github.com/tinehq/tine"
)

const workspaceCols = "id, name, path, backend, net, uid, gid, grant_gids, created_at"

// scanWorkspace reads a row of workspaceCols.
func (t *Tx) scanWorkspace(s Row) (*tine.Workspace, error) {
	var w tine.Workspace
	var created int64
	err := s.Scan(&w.ID, &w.Name, &w.Path, &w.Backend, &w.Net, &w.UID, &w.GID, t.listDest(&w.Groups), &created)
	if err != nil {
		return nil, err
	}
	if len(w.Groups) == 0 {
		w.Groups = nil
	}
	w.CreatedAt = fromUnixNano(created)
	return &w, nil
}

// PutWorkspace inserts w, setting its CreatedAt to now if zero.
func (t *Tx) PutWorkspace(w *tine.Workspace) error {
	t.stamp(&w.CreatedAt)
	keys := []uniqueKey{
		idKey("workspaces", "workspace", w.ID),
		{"workspaces_name", fmt.Sprintf("workspace name %q", w.Name), "name = ?", []any{w.Name}},
		{"workspaces_path", fmt.Sprintf("workspace path %q", w.Path), "path = ?", []any{w.Path}},
	}
	groups := w.Groups
	if groups == nil {
		groups = []int{}
	}
	list, err := t.listArg(groups)
	if err != nil {
		return fmt.Errorf("put workspace %q: %w", w.ID, err)
	}
	return t.insert("workspace", "workspaces", "", keys,
		"INSERT INTO workspaces ("+workspaceCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
		w.ID, w.Name, w.Path, w.Backend, w.Net, w.UID, w.GID, list, unixNano(w.CreatedAt))
}

// Workspace returns the workspace with the given id.
func (t *Tx) Workspace(id string) (*tine.Workspace, error) {
	return get(t, t.scanWorkspace, "workspace", id,
		"SELECT "+workspaceCols+" FROM workspaces WHERE id = ?", id)
}

// WorkspaceByPath returns the workspace managing exactly path.
func (t *Tx) WorkspaceByPath(path string) (*tine.Workspace, error) {
	return get(t, t.scanWorkspace, "workspace path", path,
		"SELECT "+workspaceCols+" FROM workspaces WHERE path = ?", path)
}

// WorkspaceByName returns the workspace called name.
func (t *Tx) WorkspaceByName(name string) (*tine.Workspace, error) {
	return get(t, t.scanWorkspace, "workspace", name,
		"SELECT "+workspaceCols+" FROM workspaces WHERE name = ?", name)
}

// Workspaces lists every workspace in creation order.
func (t *Tx) Workspaces() ([]*tine.Workspace, error) {
	return list(t, t.scanWorkspace, "workspaces",
		"SELECT "+workspaceCols+" FROM workspaces"+t.inOrder())
}

// ownedTables are the tables whose rows belong to a workspace, children
// before the tables they reference.
var ownedTables = []string{"events", "groups", "layers", "versions", "runs"}

// DeleteWorkspace removes the workspace and every run, version, layer, group
// and event of it (and, by their foreign keys, its runs' capabilities and
// nonces and its approvals). It runs inside the caller's transaction, so
// all of it goes or none.
func (t *Tx) DeleteWorkspace(id string) error {
	for _, table := range ownedTables {
		if _, err := t.db.Exec(t.ctx, "DELETE FROM "+table+" WHERE workspace = ?", id); err != nil {
			return fmt.Errorf("delete workspace %q: %s: %w", id, table, err)
		}
	}
	return t.del("workspaces", "workspace", id)
}
