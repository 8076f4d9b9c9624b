package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/atomicfile"
	"github.com/tinehq/tine/internal/mnt"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/layout"
)

// InitOptions says how to take a directory under management.
type InitOptions struct {
	Path    string // the directory; default "."
	Backend string // a registered backend's name, or auto (the first that works here); default auto
	Name    string // workspace name; default the directory's base name
	Net     bool   // give every run a network namespace and address of its own
	// Owner is who the workspace belongs to (every process in its runs
	// runs as them); nil for this process's user. The daemon sets it to
	// its caller.
	Owner *Owner
	// Groups are groups whose members may also see and act on the
	// workspace through the daemon (tine init --group).
	Groups []int
}

// markerName is the file left in a workspace directory underneath its
// mount, telling whoever finds it unmounted where the files are.
const markerName = ".tine-workspace"

// initJournal records an init in progress, so a crash between moving the
// user's files into the base layer and recording the workspace is undone by
// moving them back. Across filesystems (Copy set) the files are copied into
// the layer, verified and synced (Phase initCopying until then: the
// directory is intact and the layer is only a copy), then moved into Trash
// in the workspace directory (one rename each, so an entry is either whole
// in the directory or gone from it) and deleted; the undo copies back from
// the layer whatever the directory no longer has.
type initJournal struct {
	Path  string `json:"path"`
	Layer string `json:"layer"`
	Copy  bool   `json:"copy,omitempty"`
	Phase string `json:"phase,omitempty"`
	Trash string `json:"trash,omitempty"`
}

// Phases of an init across filesystems.
const (
	initCopying = "copying" // the layer is a copy in progress
	initCopied  = "copied"  // the layer is complete, verified and synced
)

// Init takes the directory under management and creates its source run.
func (e *Engine) Init(ctx context.Context, o InitOptions) (_ Ref, err error) {
	path, name, err := e.checkInitPath(o)
	if err != nil {
		return Ref{}, err
	}
	dir, err := openInitDir(o, path)
	if err != nil {
		return Ref{}, err
	}
	t := newInitTx(e, nil, dir)
	defer t.close()
	unlock, err := e.lockGlobal()
	if err != nil {
		return Ref{}, err
	}
	defer unlock()
	if err := e.checkNotNested(ctx, path, name); err != nil {
		return Ref{}, err
	}
	if err := e.checkNoInterruptedInit(path); err != nil {
		return Ref{}, err
	}
	be, err := e.chooseBackend(o.Backend, fdPath(dir))
	if err != nil {
		return Ref{}, err
	}
	w := &tine.Workspace{Name: name, Path: path, Backend: be.Name(), Net: o.Net, UID: os.Getuid(), GID: os.Getgid(), Groups: o.Groups}
	if o.Owner != nil {
		w.UID, w.GID = o.Owner.UID, o.Owner.GID
	}
	t.w = w
	return t.initWith(ctx, be)
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
	if err := checkRealFS(path); err != nil {
		return "", "", err
	}
	if path == "/" || fstree.Within(e.home, path) || fstree.Within(path, e.home) {
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

// openInitDir opens the directory to init, at its canonical path, and
// checks it is a directory of the owner's on the opened descriptor. The
// init does everything to it through that descriptor (fdPath): taking its
// files, putting them back on failure, writing the marker, mounting the
// source's view over it. The path is its owner's to change meanwhile (to
// swap it for a symlink to a directory of root's, say), and is opened
// following no symlink: one found there now was put there since the path
// was resolved, and the init is refused.
func openInitDir(o InitOptions, path string) (*os.File, error) {
	f, err := pinDir(path)
	switch {
	case errors.Is(err, syscall.ELOOP):
		return nil, fmt.Errorf("%s changed while it was being taken under management (a symlink is on its path now): %w", o.Path, tine.ErrState)
	case err != nil:
		return nil, fmt.Errorf("%s is not a directory: %w", o.Path, tine.ErrInvalid)
	}
	fi, err := f.Stat()
	if err == nil && !fi.IsDir() {
		err = fmt.Errorf("%s is not a directory: %w", o.Path, tine.ErrInvalid)
	}
	if err == nil {
		err = checkOwnsDir(o, path, fi)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// checkOwnsDir refuses a directory made a workspace for someone else (the
// daemon's caller) unless it is theirs: root must not take another user's,
// or a system directory, under management on a user's behalf.
func checkOwnsDir(o InitOptions, path string, fi os.FileInfo) error {
	if o.Owner == nil || o.Owner.UID == os.Geteuid() {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) != o.Owner.UID {
		return fmt.Errorf("%s does not belong to you (uid %d): a workspace must be a directory of your own: %w", path, o.Owner.UID, tine.ErrPrivilege)
	}
	return nil
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
			case fstree.Within(path, w.Path):
				return fmt.Errorf("%s is inside workspace %s (%s); nested workspaces are not allowed: %w", path, w.Name, w.Path, tine.ErrExists)
			case fstree.Within(w.Path, path):
				return fmt.Errorf("%s contains workspace %s (%s); nested workspaces are not allowed: %w", path, w.Name, w.Path, tine.ErrExists)
			case w.Name == name:
				return tine.Optionf("a workspace is already called %s (at %s); choose another with %s: %w", name, w.Path, tine.Opt("name"), tine.ErrExists)
			}
		}
		return nil
	})
}

// chooseBackend returns the backend called name, checking that it works
// here, or for "auto" the first registered backend that does.
func (e *Engine) chooseBackend(name, path string) (layer.Backend, error) {
	dir := e.lay.Workspaces()
	if name == "" || name == "auto" {
		for _, d := range e.backends.drivers {
			if e.backends.probeCached(d.Name, path, dir) == nil {
				return d.New(), nil
			}
		}
		return nil, fmt.Errorf("no backend works here: %w", tine.ErrUnsupported)
	}
	be, err := e.backends.make(name)
	if err != nil {
		return nil, err
	}
	if err := e.backends.probeCached(name, path, dir); err != nil {
		return nil, tine.Optionf("backend %s cannot be used for %s: %w; use %s %s", name, path, err, tine.Opt("backend"), e.suggest(path, dir))
	}
	return be, nil
}

// suggest names the backends that would work instead.
func (e *Engine) suggest(path, dir string) string {
	var ok []string
	for _, d := range e.backends.drivers {
		if e.backends.probeCached(d.Name, path, dir) == nil {
			ok = append(ok, d.Name)
		}
	}
	return strings.Join(ok, " or ")
}

// initTx is the init of workspace w: importing its files into the first
// layer (by rename, or by a journaled copy across filesystems) and
// adopting its source run. w's directory is used through dir, held open
// (openInitDir), by the path at that names it.
type initTx struct {
	e     *Engine
	w     *tine.Workspace
	dir   *os.File
	at    string   // fdPath(dir)
	mount *os.File // the source's view bound on dir (mnt.BindAt), until close
}

func newInitTx(e *Engine, w *tine.Workspace, dir *os.File) *initTx {
	return &initTx{e: e, w: w, dir: dir, at: fdPath(dir)}
}

// close releases the directory and the mount's root (the mount stays).
func (t *initTx) close() {
	if t.mount != nil {
		t.mount.Close()
	}
	t.dir.Close()
}

// initWith takes w's directory under management with backend be; w's id
// and creation time are set here.
func (t *initTx) initWith(ctx context.Context, be layer.Backend) (_ Ref, err error) {
	e, w := t.e, t.w
	now := e.now().UTC()
	w.ID, w.CreatedAt = tine.NewID(tine.PrefixWorkspace), now
	path := w.Path
	lay := &tine.Layer{ID: tine.NewID(tine.PrefixLayer), Workspace: w.ID, CreatedAt: now}
	v := &tine.Version{ID: tine.NewID(tine.PrefixVersion), Workspace: w.ID, Kind: tine.VersionInit, Layers: []string{lay.ID}, CreatedAt: now}
	r := &tine.Run{ID: tine.NewID(tine.PrefixRun), Workspace: w.ID, Name: "source", Role: tine.RoleSource,
		State: tine.StateActive, Base: v.ID, Origin: v.ID, CreatedAt: now, UpdatedAt: now}
	v.Run = r.ID
	var u undo
	defer u.run(&err)
	if err := t.importFiles(ctx, be, lay.ID, &u); err != nil {
		return Ref{}, err
	}
	if err := t.adoptSource(ctx, be, r, v, &u); err != nil {
		return Ref{}, err
	}
	r.GitHead = gitHead(ctx, path)
	lay.Bytes, _ = fstree.DiskUsage(e.lay.Workspace(w.ID).Layer(lay.ID))
	err = e.store.Update(ctx, func(tx tine.Tx) error {
		return firstError(tx.PutWorkspace(w), tx.PutLayer(lay), tx.PutVersion(v), tx.PutRun(r),
			tx.AppendEvent(e.event(w.ID, r.ID, tine.EventInit, map[string]any{"path": path, "backend": w.Backend, "version": v.ID})))
	})
	if err != nil {
		return Ref{}, err
	}
	os.Remove(e.lay.Workspace(w.ID).InitJournal())
	return Ref{w, r}, nil
}

// importFiles creates the base layer from the workspace directory. For a
// stacking backend the files move (journaled, so a crash moves them back)
// and a marker is left in the emptied directory. Across filesystems they are
// copied, verified and synced before anything leaves the directory. If the
// user's files cannot be put back, the undo leaves the layer and its
// journal for the sweeper rather than remove the only copy.
func (t *initTx) importFiles(ctx context.Context, be layer.Backend, l string, u *undo) error {
	e, w := t.e, t.w
	layers := e.lay.Workspace(w.ID).Layers()
	if err := os.MkdirAll(layers, 0o700); err != nil {
		return err
	}
	restored := true // false once moving the files back has failed
	u.add(func() error {
		if !restored {
			return fmt.Errorf("the files of %s are kept in %s; the next tine command retries", w.Path, e.lay.Workspace(w.ID).Dir())
		}
		return os.RemoveAll(e.lay.Workspace(w.ID).Dir())
	})
	move := e.backends.stacking(w.Backend)
	dst := e.lay.Workspace(w.ID).Layer(l)
	if !move {
		if err := be.Import(ctx, t.at, dst, false); err != nil {
			return fmt.Errorf("importing %s: %w", w.Path, err)
		}
		u.add(func() error { return be.RemoveLayer(ctx, dst) })
		return nil
	}
	j := initJournal{Path: w.Path, Layer: dst}
	if !canRename(layers, t.at, ".tine-init-"+tine.NewID("")) {
		j.Copy, j.Phase, j.Trash = true, initCopying, filepath.Join(w.Path, ".tine-init-"+tine.NewID(""))
	}
	journal := e.lay.Workspace(w.ID).InitJournal()
	if err := writeInitJournal(journal, j); err != nil {
		return err
	}
	// From here on the undo puts the files back, and removes the layer
	// only once they are back.
	u.add(func() error {
		if !restored {
			return nil
		}
		return be.RemoveLayer(ctx, dst)
	})
	u.add(func() error {
		err := moveBack(dst, t.at)
		restored = err == nil
		return err
	})
	if err := faultPoint("init"); err != nil {
		return err
	}
	if j.Copy {
		if err := t.copyIn(ctx, be, &j, journal); err != nil {
			return err
		}
	} else if err := be.Import(ctx, t.at, dst, true); err != nil {
		return fmt.Errorf("importing %s: %w", w.Path, err)
	}
	if err := faultPoint("init"); err != nil {
		return err
	}
	return writeWorkspaceMarker(t.at, markerText(w, e.home))
}

// writeWorkspaceMarker writes the marker into the workspace directory
// dir, a new file: never through a symlink put there meanwhile.
func writeWorkspaceMarker(dir, text string) error {
	f, err := os.OpenFile(filepath.Join(dir, markerName), os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o444)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	return errors.Join(err, f.Close())
}

// copyIn is the import across filesystems: copy, verify, sync, journal
// that the layer is complete, and only then empty the directory, through
// the trash.
func (t *initTx) copyIn(ctx context.Context, be layer.Backend, j *initJournal, journal string) error {
	w := t.w
	if err := be.Import(ctx, t.at, j.Layer, false); err != nil {
		return fmt.Errorf("copying %s into %s (nothing moved; the directory is as it was): %w", w.Path, j.Layer, err)
	}
	if err := faultPoint("init"); err != nil {
		return err
	}
	if err := sameTree(t.at, j.Layer); err != nil {
		return fmt.Errorf("the copy of %s does not match it (changed while it was copied?); nothing moved: %w", w.Path, err)
	}
	if err := syncFS(j.Layer); err != nil {
		return err
	}
	j.Phase = initCopied
	if err := writeInitJournal(journal, *j); err != nil {
		return err
	}
	if err := faultPoint("init"); err != nil {
		return err
	}
	trash := filepath.Join(t.at, filepath.Base(j.Trash))
	if err := os.Mkdir(trash, 0o700); err != nil {
		return err
	}
	names, err := readNames(t.at)
	if err != nil {
		return err
	}
	for _, n := range names {
		if n == filepath.Base(j.Trash) {
			continue
		}
		if err := os.Rename(filepath.Join(t.at, n), filepath.Join(trash, n)); err != nil {
			return err
		}
		if err := faultPoint("init"); err != nil {
			return err
		}
	}
	return fstree.Purge(trash)
}

func writeInitJournal(path string, j initJournal) error {
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o644, atomicfile.Durable)
}

// checkNoInterruptedInit refuses to init path while an earlier init of it,
// or of a directory overlapping it, is still to be undone: the files that
// init took are in its layer, not in the directory.
func (e *Engine) checkNoInterruptedInit(path string) error {
	ents, _ := os.ReadDir(e.lay.Workspaces())
	for _, ent := range ents {
		b, err := os.ReadFile(e.lay.Workspace(ent.Name()).InitJournal())
		if err != nil {
			continue
		}
		var j initJournal
		if json.Unmarshal(b, &j) != nil || j.Path == path || fstree.Within(path, j.Path) || fstree.Within(j.Path, path) {
			return fmt.Errorf("an interrupted init of %s could not be undone yet: its files are in %s; free space or fix the error the last command warned about, then run any tine command: %w", j.Path, j.Layer, tine.ErrExists)
		}
	}
	return nil
}

func markerText(w *tine.Workspace, home string) string {
	return fmt.Sprintf(`This directory is tine workspace %s (%s); its files are not mounted.
They are kept under %s.
Any tine command (for example "tine ls") mounts them here again;
"tine release %s" turns the directory back into plain files.
`, w.Name, w.ID, home, w.Path)
}

// moveBack returns the user's files from layer dir to the workspace
// directory, removing the marker first. An init across filesystems (its
// journal, beside the layers, says so) is undone by copying back.
func moveBack(dir, path string) error {
	os.Remove(filepath.Join(path, markerName))
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil // the import never started
	}
	var j initJournal
	if b, err := os.ReadFile(layout.WorkspaceAt(filepath.Dir(filepath.Dir(dir))).InitJournal()); err == nil && json.Unmarshal(b, &j) == nil && j.Copy {
		return copyBack(j, dir, path)
	}
	return fstree.MoveContents(dir, path)
}

// copyBack undoes an init across filesystems. Before the layer was
// complete the directory was not touched; after, every entry the directory
// lacks (moved into the trash, perhaps half deleted) is copied back from
// the layer, through a scratch name and a rename, so a crash meanwhile
// leaves each entry whole or absent.
func copyBack(j initJournal, dir, path string) error {
	if j.Phase != initCopied {
		return nil
	}
	trash := filepath.Join(path, filepath.Base(j.Trash)) // path may name the directory otherwise than j.Path
	if err := fstree.Purge(trash); err != nil {
		return err
	}
	scratch := trash + ".restore"
	names, err := readNames(dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(path, n)); err == nil {
			continue
		}
		if err := fstree.Purge(scratch); err != nil {
			return err
		}
		if err := os.Mkdir(scratch, 0o700); err != nil {
			return err
		}
		c := filepath.Join(scratch, "entry")
		if err := copyEntry(context.Background(), filepath.Join(dir, n), c); err != nil {
			return fmt.Errorf("copying %s back: %w", n, err)
		}
		if err := os.Rename(c, filepath.Join(path, n)); err != nil {
			return err
		}
	}
	if err := fstree.Purge(scratch); err != nil {
		return err
	}
	return fstree.CopyAttrs(dir, path)
}

// adoptSource makes the workspace directory the source's view: through a
// mount of the base layer for a stacking backend, as it is for a flat one.
func (t *initTx) adoptSource(ctx context.Context, be layer.Backend, r *tine.Run, v *tine.Version, u *undo) error {
	e, w := t.e, t.w
	br := e.backendRun(w, r)
	if e.backends.stacking(w.Backend) {
		if err := e.activateView(ctx, be, br, e.layerPaths(v), u); err != nil {
			return err
		}
		// Bound on the directory held open, not on its name.
		m, err := mnt.BindAt(br.View, t.dir)
		if err != nil {
			return err
		}
		t.mount = m
		u.add(func() error {
			m, t.mount = t.mount, nil
			return mnt.Detach(m)
		})
		return markBase(br, v.ID)
	}
	if err := os.MkdirAll(br.Dir, 0o700); err != nil {
		return err
	}
	return markBase(br, v.ID)
}

// activate gives run r its view of layers and, for the source of a stacking
// backend, binds that view onto the workspace path.
func (e *Engine) activate(ctx context.Context, be layer.Backend, w *tine.Workspace, r *tine.Run, br layer.Run, layers []string, version string, u *undo) error {
	if err := noteRun(ctx, r.ID); err != nil {
		return err
	}
	if err := e.activateView(ctx, be, br, layers, u); err != nil {
		return err
	}
	if r.Role == tine.RoleSource && e.backends.stacking(w.Backend) {
		if err := mnt.Bind(br.View, w.Path); err != nil {
			return err
		}
		u.add(func() error { return mnt.UnmountAll(w.Path) })
	}
	return markBase(br, version)
}

// activateView gives run br its view of layers.
func (e *Engine) activateView(ctx context.Context, be layer.Backend, br layer.Run, layers []string, u *undo) error {
	if err := os.MkdirAll(br.Dir, 0o700); err != nil {
		return err
	}
	u.add(func() error { return os.RemoveAll(br.Dir) })
	if err := be.Activate(ctx, br, layers); err != nil {
		return err
	}
	u.add(func() error { return be.Deactivate(ctx, br) })
	return nil
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
