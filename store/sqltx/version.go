package sqltx

import (
	"fmt"

	"github.com/tinehq/tine"
)

const versionCols = "id, workspace, parent, run, kind, label, layers, created_at"

// scanVersion reads a row of versionCols. Layers is never nil.
func (t *Tx) scanVersion(s Row) (*tine.Version, error) {
	var v tine.Version
	var created int64
	err := s.Scan(&v.ID, &v.Workspace, &v.Parent, &v.Run, &v.Kind, &v.Label, t.listDest(&v.Layers), &created)
	if err != nil {
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
func (t *Tx) PutVersion(v *tine.Version) error {
	t.stamp(&v.CreatedAt)
	layers := v.Layers
	if layers == nil {
		layers = []string{}
	}
	list, err := t.listArg(layers)
	if err != nil {
		return fmt.Errorf("put version %q: %w", v.ID, err)
	}
	return t.insert("version", "versions", v.Workspace, []uniqueKey{idKey("versions", "version", v.ID)},
		"INSERT INTO versions ("+versionCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		v.ID, v.Workspace, v.Parent, v.Run, v.Kind, v.Label, list, unixNano(v.CreatedAt))
}

// Version returns the version with the given id.
func (t *Tx) Version(id string) (*tine.Version, error) {
	return get(t, t.scanVersion, "version", id,
		"SELECT "+versionCols+" FROM versions WHERE id = ?", id)
}

// Versions lists the versions of workspace ws in creation order.
func (t *Tx) Versions(ws string) ([]*tine.Version, error) {
	return list(t, t.scanVersion, "versions",
		"SELECT "+versionCols+" FROM versions WHERE workspace = ?"+t.inOrder(), ws)
}

// DeleteVersion removes the version with the given id.
func (t *Tx) DeleteVersion(id string) error {
	return t.del("versions", "version", id)
}

const layerCols = "id, workspace, bytes, created_at"

// scanLayer reads a row of layerCols.
func scanLayer(s Row) (*tine.Layer, error) {
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
func (t *Tx) PutLayer(l *tine.Layer) error {
	t.stamp(&l.CreatedAt)
	return t.insert("layer", "layers", l.Workspace, []uniqueKey{idKey("layers", "layer", l.ID)},
		"INSERT INTO layers ("+layerCols+") VALUES (?, ?, ?, ?)",
		l.ID, l.Workspace, l.Bytes, unixNano(l.CreatedAt))
}

// Layer returns the layer with the given id.
func (t *Tx) Layer(id string) (*tine.Layer, error) {
	return get(t, scanLayer, "layer", id, "SELECT "+layerCols+" FROM layers WHERE id = ?", id)
}

// Layers lists the layers of workspace ws in creation order.
func (t *Tx) Layers(ws string) ([]*tine.Layer, error) {
	return list(t, scanLayer, "layers",
		"SELECT "+layerCols+" FROM layers WHERE workspace = ?"+t.inOrder(), ws)
}

// DeleteLayer removes the layer with the given id.
func (t *Tx) DeleteLayer(id string) error {
	return t.del("layers", "layer", id)
}

const groupCols = "id, workspace, parent, version, created_at"

// scanGroup reads a row of groupCols.
func scanGroup(s Row) (*tine.Group, error) {
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
func (t *Tx) PutGroup(g *tine.Group) error {
	t.stamp(&g.CreatedAt)
	return t.insert("group", "groups", g.Workspace, []uniqueKey{idKey("groups", "group", g.ID)},
		"INSERT INTO groups ("+groupCols+") VALUES (?, ?, ?, ?, ?)",
		g.ID, g.Workspace, g.Parent, g.Version, unixNano(g.CreatedAt))
}

// Group returns the group with the given id.
func (t *Tx) Group(id string) (*tine.Group, error) {
	return get(t, scanGroup, "group", id, "SELECT "+groupCols+" FROM groups WHERE id = ?", id)
}

// Groups lists the groups of workspace ws in creation order.
func (t *Tx) Groups(ws string) ([]*tine.Group, error) {
	return list(t, scanGroup, "groups",
		"SELECT "+groupCols+" FROM groups WHERE workspace = ?"+t.inOrder(), ws)
}

// DeleteGroup removes the group with the given id.
func (t *Tx) DeleteGroup(id string) error {
	return t.del("groups", "group", id)
}
