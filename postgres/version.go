package postgres

import (
	"fmt"

	"github.com/tinehq/tine"
)

const versionCols = "id, workspace, parent, run, kind, label, layers, created_at"

// scanVersion reads a row of versionCols. Layers is never nil.
func scanVersion(s scanner) (*tine.Version, error) {
	var v tine.Version
	var created int64
	if err := s.Scan(&v.ID, &v.Workspace, &v.Parent, &v.Run, &v.Kind, &v.Label, &v.Layers, &created); err != nil {
		return nil, err
	}
	if v.Layers == nil {
		v.Layers = []string{}
	}
	v.CreatedAt = fromUnixNano(created)
	return &v, nil
}

// PutVersion inserts v, setting its CreatedAt to now if zero. It wraps
// tine.ErrNotFound if v's workspace does not exist.
func (t *tx) PutVersion(v *tine.Version) error {
	t.stamp(&v.CreatedAt)
	layers := v.Layers
	if layers == nil {
		layers = []string{}
	}
	return t.insert("version", v.Workspace, keys{"versions_id": fmt.Sprintf("version id %q", v.ID)},
		"INSERT INTO versions ("+versionCols+") VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
		v.ID, v.Workspace, v.Parent, v.Run, v.Kind, v.Label, layers, unixNano(v.CreatedAt))
}

// Version returns the version with the given id.
func (t *tx) Version(id string) (*tine.Version, error) {
	return get(t, scanVersion, "version", id,
		"SELECT "+versionCols+" FROM versions WHERE id = $1", id)
}

// Versions lists the versions of workspace ws in creation order.
func (t *tx) Versions(ws string) ([]*tine.Version, error) {
	return list(t, scanVersion, "versions",
		"SELECT "+versionCols+" FROM versions WHERE workspace = $1 ORDER BY created_at, ord", ws)
}

// DeleteVersion removes the version with the given id.
func (t *tx) DeleteVersion(id string) error {
	return t.del("versions", "version", id)
}

const layerCols = "id, workspace, bytes, created_at"

// scanLayer reads a row of layerCols.
func scanLayer(s scanner) (*tine.Layer, error) {
	var l tine.Layer
	var created int64
	if err := s.Scan(&l.ID, &l.Workspace, &l.Bytes, &created); err != nil {
		return nil, err
	}
	l.CreatedAt = fromUnixNano(created)
	return &l, nil
}

// PutLayer inserts l, setting its CreatedAt to now if zero. It wraps
// tine.ErrNotFound if l's workspace does not exist.
func (t *tx) PutLayer(l *tine.Layer) error {
	t.stamp(&l.CreatedAt)
	return t.insert("layer", l.Workspace, keys{"layers_id": fmt.Sprintf("layer id %q", l.ID)},
		"INSERT INTO layers ("+layerCols+") VALUES ($1, $2, $3, $4)",
		l.ID, l.Workspace, l.Bytes, unixNano(l.CreatedAt))
}

// Layer returns the layer with the given id.
func (t *tx) Layer(id string) (*tine.Layer, error) {
	return get(t, scanLayer, "layer", id, "SELECT "+layerCols+" FROM layers WHERE id = $1", id)
}

// Layers lists the layers of workspace ws in creation order.
func (t *tx) Layers(ws string) ([]*tine.Layer, error) {
	return list(t, scanLayer, "layers",
		"SELECT "+layerCols+" FROM layers WHERE workspace = $1 ORDER BY created_at, ord", ws)
}

// DeleteLayer removes the layer with the given id.
func (t *tx) DeleteLayer(id string) error {
	return t.del("layers", "layer", id)
}

const groupCols = "id, workspace, parent, version, created_at"

// scanGroup reads a row of groupCols.
func scanGroup(s scanner) (*tine.Group, error) {
	var g tine.Group
	var created int64
	if err := s.Scan(&g.ID, &g.Workspace, &g.Parent, &g.Version, &created); err != nil {
		return nil, err
	}
	g.CreatedAt = fromUnixNano(created)
	return &g, nil
}

// PutGroup inserts g, setting its CreatedAt to now if zero. It wraps
// tine.ErrNotFound if g's workspace does not exist.
func (t *tx) PutGroup(g *tine.Group) error {
	t.stamp(&g.CreatedAt)
	return t.insert("group", g.Workspace, keys{"groups_id": fmt.Sprintf("group id %q", g.ID)},
		"INSERT INTO groups ("+groupCols+") VALUES ($1, $2, $3, $4, $5)",
		g.ID, g.Workspace, g.Parent, g.Version, unixNano(g.CreatedAt))
}

// Group returns the group with the given id.
func (t *tx) Group(id string) (*tine.Group, error) {
	return get(t, scanGroup, "group", id, "SELECT "+groupCols+" FROM groups WHERE id = $1", id)
}

// Groups lists the groups of workspace ws in creation order.
func (t *tx) Groups(ws string) ([]*tine.Group, error) {
	return list(t, scanGroup, "groups",
		"SELECT "+groupCols+" FROM groups WHERE workspace = $1 ORDER BY created_at, ord", ws)
}

// DeleteGroup removes the group with the given id.
func (t *tx) DeleteGroup(id string) error {
	return t.del("groups", "group", id)
}
