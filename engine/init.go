package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/mnt"
	"github.com/tinehq/tine/layer"
)

// InitOptions says how to take a directory under management.
type InitOptions struct {
	Path    string // the directory; default "."
	Backend string // auto, overlay, btrfs, reflink or copy; default auto
	Name    string // workspace name; default the directory's base name
	Net     bool   // give every run a network namespace and address of its own
}

// markerName is the file left in a workspace directory underneath its
// mount, telling whoever finds it unmounted where the files are.
const markerName = ".tine-workspace"

// initJournal records an init in progress, so a crash between moving the
// user's files into the base layer and recording the workspace is undone by
// moving them back.
type initJournal struct {
	Path  string `json:"path"`
	Layer string `json:"layer"`
}

// Init takes the directory under management and creates its source run.
func (e *Engine) Init(ctx context.Context, o InitOptions) (_ Ref, err error) {
	path, name, err := e.checkInitPath(o)
	if err != nil {
		return Ref{}, err
	}
	unlock, err := e.lockGlobal()
	if err != nil {
		return Ref{}, err
	}
	defer unlock()
	if err := e.checkNotNested(ctx, path, name); err != nil {
		return Ref{}, err
	}
	be, err := e.chooseBackend(o.Backend, path)
	if err != nil {
		return Ref{}, err
	}
	return e.initWith(ctx, be, path, name, o.Net)
}

func (e *Engine) checkInitPath(o InitOptions) (path, name string, err error) {
	if o.Path == "" {
		o.Path = "."
	}
	path, err = canonical(o.Path)
	if errors.Is(err, os.ErrNotExist) {
		return "", "", fmt.Errorf("%s does not exist: %w", o.Path, tine.ErrInvalid)
	}
	if err != nil {
		return "", "", fmt.Errorf("%s: %v: %w", o.Path, err, tine.ErrInvalid)
	}
	fi, err := os.Stat(path)
	if err != nil || !fi.IsDir() {
		return "", "", fmt.Errorf("%s is not a directory: %w", o.Path, tine.ErrInvalid)
	}
	if path == "/" || within(e.home, path) || within(path, e.home) {
		return "", "", fmt.Errorf("%s overlaps tine's state directory %s: %w", path, e.home, tine.ErrInvalid)
	}
	name = o.Name
	if name == "" {
		name = sanitizeName(filepath.Base(path))
	}
	if !tine.ValidName(name) {
		return "", "", fmt.Errorf("workspace name %q: use 1-64 letters, digits, '.', '_' or '-': %w", name, tine.ErrInvalid)
	}
	return path, name, nil
}

func sanitizeName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 128 && (r == '.' || r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, s)
	s = strings.TrimLeft(s, ".-_")
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" {
		return "workspace"
	}
	return s
}

// checkNotNested refuses a path inside, or containing, a managed workspace,
// and a name already taken.
func (e *Engine) checkNotNested(ctx context.Context, path, name string) error {
	return e.store.View(ctx, func(tx tine.Tx) error {
		all, err := tx.Workspaces()
		if err != nil {
			return err
		}
		for _, w := range all {
			switch {
			case w.Path == path:
				return fmt.Errorf("%s is already workspace %s: %w", path, w.Name, tine.ErrExists)
			case within(path, w.Path):
				return fmt.Errorf("%s is inside workspace %s (%s); nested workspaces are not allowed: %w", path, w.Name, w.Path, tine.ErrExists)
			case within(w.Path, path):
				return fmt.Errorf("%s contains workspace %s (%s); nested workspaces are not allowed: %w", path, w.Name, w.Path, tine.ErrExists)
			case w.Name == name:
				return fmt.Errorf("a workspace is already called %s (at %s); choose another with --name: %w", name, w.Path, tine.ErrExists)
			}
		}
		return nil
	})
}

// chooseBackend returns the backend called name, checking that it works
// here, or for "auto" the first of Backends that does.
func (e *Engine) chooseBackend(name, path string) (layer.Backend, error) {
	dir := filepath.Join(e.home, "workspaces")
	if name == "" || name == "auto" {
		for _, n := range Backends {
			if e.probeCached(n, path, dir) == nil {
				return newBackend(n)
			}
		}
		return nil, fmt.Errorf("no backend works here: %w", tine.ErrUnsupported)
	}
	be, err := newBackend(name)
	if err != nil {
		return nil, err
	}
	if err := e.probeCached(name, path, dir); err != nil {
		return nil, fmt.Errorf("backend %s cannot be used for %s: %w; %s", name, path, err, e.suggest(path, dir))
	}
	return be, nil
}

// suggest names the backends that would work instead.
func (e *Engine) suggest(path, dir string) string {
	var ok []string
	for _, n := range Backends {
		if e.probeCached(n, path, dir) == nil {
			ok = append(ok, n)
		}
	}
	return "use --backend " + strings.Join(ok, " or ")
}

func (e *Engine) initWith(ctx context.Context, be layer.Backend, path, name string, isolate bool) (_ Ref, err error) {
	now := e.now().UTC()
	w := &tine.Workspace{ID: tine.NewID(tine.PrefixWorkspace), Name: name, Path: path, Backend: be.Name(), Net: isolate, CreatedAt: now}
	lay := &tine.Layer{ID: tine.NewID(tine.PrefixLayer), Workspace: w.ID, CreatedAt: now}
	v := &tine.Version{ID: tine.NewID(tine.PrefixVersion), Workspace: w.ID, Kind: tine.VersionInit, Layers: []string{lay.ID}, CreatedAt: now}
	r := &tine.Run{ID: tine.NewID(tine.PrefixRun), Workspace: w.ID, Name: "source", Role: tine.RoleSource,
		State: tine.StateActive, Base: v.ID, Origin: v.ID, CreatedAt: now, UpdatedAt: now}
	v.Run = r.ID
	var u undo
	defer u.run(&err)
	if err := e.importFiles(ctx, be, w, lay.ID, &u); err != nil {
		return Ref{}, err
	}
	if err := e.adoptSource(ctx, be, w, r, v, &u); err != nil {
		return Ref{}, err
	}
	r.GitHead = gitHead(ctx, path)
	lay.Bytes, _ = fstree.DiskUsage(e.layerDir(w.ID, lay.ID))
	err = e.store.Update(ctx, func(tx tine.Tx) error {
		return firstError(tx.PutWorkspace(w), tx.PutLayer(lay), tx.PutVersion(v), tx.PutRun(r),
			tx.AppendEvent(e.event(w.ID, r.ID, "init", map[string]any{"path": path, "backend": w.Backend, "version": v.ID})))
	})
	if err != nil {
		return Ref{}, err
	}
	os.Remove(filepath.Join(e.wsDir(w.ID), "init.json"))
	return Ref{w, r}, nil
}

// importFiles creates the base layer from the workspace directory. For a
// stacking backend the files move (journaled, so a crash moves them back)
// and a marker is left in the emptied directory.
func (e *Engine) importFiles(ctx context.Context, be layer.Backend, w *tine.Workspace, l string, u *undo) error {
	layers := filepath.Join(e.wsDir(w.ID), "layers")
	if err := os.MkdirAll(layers, 0o700); err != nil {
		return err
	}
	u.add(func() error { return os.RemoveAll(e.wsDir(w.ID)) })
	move := stacking(w.Backend)
	dst := e.layerDir(w.ID, l)
	if move {
		j, _ := json.Marshal(initJournal{Path: w.Path, Layer: dst})
		if err := writeFileAtomic(filepath.Join(e.wsDir(w.ID), "init.json"), j); err != nil {
			return err
		}
	}
	if err := be.Import(ctx, w.Path, dst, move); err != nil {
		return fmt.Errorf("importing %s: %w", w.Path, err)
	}
	u.add(func() error { return be.RemoveLayer(ctx, dst) })
	if !move {
		return nil
	}
	u.add(func() error { return moveBack(dst, w.Path) })
	return os.WriteFile(filepath.Join(w.Path, markerName), []byte(markerText(w, e.home)), 0o444)
}

func markerText(w *tine.Workspace, home string) string {
	return fmt.Sprintf(`This directory is tine workspace %s (%s); its files are not mounted.
They are kept under %s.
Any tine command (for example "tine ls") mounts them here again;
"tine release %s" turns the directory back into plain files.
`, w.Name, w.ID, home, w.Path)
}

// moveBack returns the user's files from layer dir to the workspace
// directory, removing the marker first.
func moveBack(dir, path string) error {
	os.Remove(filepath.Join(path, markerName))
	return fstree.MoveContents(dir, path)
}

// adoptSource makes the workspace directory the source's view: through a
// mount of the base layer for a stacking backend, as it is for a flat one.
func (e *Engine) adoptSource(ctx context.Context, be layer.Backend, w *tine.Workspace, r *tine.Run, v *tine.Version, u *undo) error {
	br := e.backendRun(w, r)
	if stacking(w.Backend) {
		return e.activate(ctx, be, w, r, br, e.layerPaths(v), v.ID, u)
	}
	if err := os.MkdirAll(br.Dir, 0o700); err != nil {
		return err
	}
	return markBase(br, v.ID)
}

// activate gives run r its view of layers and, for the source of a stacking
// backend, binds that view onto the workspace path.
func (e *Engine) activate(ctx context.Context, be layer.Backend, w *tine.Workspace, r *tine.Run, br layer.Run, layers []string, version string, u *undo) error {
	if err := os.MkdirAll(br.Dir, 0o700); err != nil {
		return err
	}
	u.add(func() error { return os.RemoveAll(br.Dir) })
	if err := be.Activate(ctx, br, layers); err != nil {
		return err
	}
	u.add(func() error { return be.Deactivate(ctx, br) })
	if r.Role == tine.RoleSource && stacking(w.Backend) {
		if err := mnt.Bind(br.View, w.Path); err != nil {
			return err
		}
		u.add(func() error { return mnt.UnmountAll(w.Path) })
	}
	return markBase(br, version)
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
