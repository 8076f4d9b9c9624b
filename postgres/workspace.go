package postgres

import (
	"fmt"

	"github.com/tinehq/tine"
)

const workspaceCols = "id, name, path, backend, net, uid, gid, grant_gids, created_at"

// scanWorkspace reads a row of workspaceCols.
func scanWorkspace(s scanner) (*tine.Workspace, error) {
	var w tine.Workspace
	var created int64
	if err := s.Scan(&w.ID, &w.Name, &w.Path, &w.Backend, &w.Net, &w.UID, &w.GID, &w.Groups, &created); err != nil {
		return nil, err
	}
	if len(w.Groups) == 0 {
		w.Groups = nil
	}
	w.CreatedAt = fromUnixNano(created)
	return &w, nil
}

// PutWorkspace inserts w, setting its CreatedAt to now if zero.
func (t *tx) PutWorkspace(w *tine.Workspace) error {
	t.stamp(&w.CreatedAt)
	k := keys{
		"workspaces_id":   fmt.Sprintf("workspace id %q", w.ID),
		"workspaces_name": fmt.Sprintf("workspace name %q", w.Name),
		"workspaces_path": fmt.Sprintf("workspace path %q", w.Path),
	}
	groups := w.Groups
	if groups == nil {
		groups = []int{}
	}
	return t.insert("workspace", "", k,
		"INSERT INTO workspaces ("+workspaceCols+") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
		w.ID, w.Name, w.Path, w.Backend, w.Net, w.UID, w.GID, groups, unixNano(w.CreatedAt))
}

// Workspace returns the workspace with the given id.
func (t *tx) Workspace(id string) (*tine.Workspace, error) {
	return get(t, scanWorkspace, "workspace", id,
		"SELECT "+workspaceCols+" FROM workspaces WHERE id = $1", id)
}

// WorkspaceByPath returns the workspace managing exactly path.
func (t *tx) WorkspaceByPath(path string) (*tine.Workspace, error) {
	return get(t, scanWorkspace, "workspace path", path,
		"SELECT "+workspaceCols+" FROM workspaces WHERE path = $1", path)
}

// WorkspaceByName returns the workspace called name.
func (t *tx) WorkspaceByName(name string) (*tine.Workspace, error) {
	return get(t, scanWorkspace, "workspace", name,
		"SELECT "+workspaceCols+" FROM workspaces WHERE name = $1", name)
}

// Workspaces lists every workspace in creation order.
func (t *tx) Workspaces() ([]*tine.Workspace, error) {
	return list(t, scanWorkspace, "workspaces",
		"SELECT "+workspaceCols+" FROM workspaces ORDER BY created_at, ord")
}

// ownedTables are the tables whose rows belong to a workspace, children
// before the tables they reference.
var ownedTables = []string{"events", "groups", "layers", "versions", "runs"}

// DeleteWorkspace removes the workspace and every run, version, layer, group
// and event of it (and, by their foreign keys, its runs' capabilities and
// nonces and its approvals). It runs inside the caller's transaction, so
// all of it goes or none.
func (t *tx) DeleteWorkspace(id string) error {
	for _, table := range ownedTables {
		if _, err := t.exec("DELETE FROM "+table+" WHERE workspace = $1", id); err != nil {
			return fmt.Errorf("delete workspace %q: %s: %w", id, table, err)
		}
	}
	return t.del("workspaces", "workspace", id)
}
