package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/atomicfile"
	"github.com/tinehq/tine/internal/mnt"
	"github.com/tinehq/tine/internal/progress"
	"github.com/tinehq/tine/layer"
	"golang.org/x/sys/unix"
)

// A release of a stacking workspace is journaled in release.json, in one of
// two modes, chosen by whether the state directory's layers can be renamed
// into the workspace directory:
//
//   - relRename (same filesystem): the bottom layer's entries are renamed
//     into the workspace directory, then each layer above it and the
//     source's upper directory are applied entry by entry (a whiteout
//     deletes, an opaque directory replaces, anything else is renamed in).
//     Every step consumes what it applied from its layer, so after a crash
//     the layers hold exactly what is left to do and the step can be
//     redone. Nothing is copied: the cost follows the delta, not the tree.
//     The journal is written committed, before the first rename.
//   - relStage (another filesystem): the source's view is copied into a
//     stage inside the workspace directory (on the workspace's own
//     filesystem), verified against the view and synced while the journal
//     says phaseStaging (a crash, a full disk or a failed verify removes
//     the stage: the layers are untouched); only then is the journal
//     committed and the stage's entries renamed into place.
//
// A committed journal is only ever rolled forward (by Release, or by the
// sweeper through releaseTx.finish), and a journal of either kind is never
// replaced by a new attempt, so a retry never overwrites the only complete
// copy of the user's files.
const (
	relRename = "rename"
	relStage  = "stage"

	phaseStaging   = "staging"
	phaseCommitted = "committed"
)

// releaseJournal is release.json.
type releaseJournal struct {
	Path string `json:"path"`
	// Stage is the staged copy (relStage, and the only field besides Path
	// of an older tine's journal, whose complete stage is in the state
	// directory).
	Stage string `json:"stage,omitempty"`
	Mode  string `json:"mode,omitempty"`
	Phase string `json:"phase,omitempty"`
	// Layers are, for relRename, the source's layers bottom first and then
	// its upper directory.
	Layers []string `json:"layers,omitempty"`
	// Dirs are the times of every directory of Layers[1:] (or the stage's
	// root), taken before anything moved: applying entries changes their
	// parents' times, so these are set last, in order.
	Dirs []dirTimes `json:"dirs,omitempty"`
	// Temp is a scratch name in the workspace directory for moves that
	// must copy (across mounts, or pinned files).
	Temp string `json:"temp,omitempty"`
}

// dirTimes is one directory's access and modification times, in ns.
type dirTimes struct {
	Path  string `json:"p"`
	Atime int64  `json:"a"`
	Mtime int64  `json:"m"`
}

func (j *releaseJournal) committed() bool { return j.Phase != phaseStaging }

// releaseTx is the release of workspace w: its journal, its phases and its
// recovery. Release makes one for its attempt, the sweeper one for a
// release it finds unfinished.
type releaseTx struct {
	e *Engine
	w *tine.Workspace
	// aside and asideNames are where prepare moved what was beneath the
	// workspace's mount, and what (clearBeneath).
	aside      string
	asideNames []string
}

func newReleaseTx(e *Engine, w *tine.Workspace) *releaseTx { return &releaseTx{e: e, w: w} }

// Release stops managing the workspace at ref (a path, name or id): its
// directory is left holding, as plain files, exactly what the source run
// sees, and every fork's view is removed. Forks with unmerged changes are
// refused unless force is set. A release an earlier attempt committed is
// finished, whatever force says.
func (e *Engine) Release(ctx context.Context, ref string, force bool) (*Released, error) {
	w, err := e.FindWorkspace(ctx, ref)
	if err != nil {
		return nil, err
	}
	tx := newReleaseTx(e, w)
	unlockAll, err := e.lockGlobal()
	if err != nil {
		return nil, err
	}
	defer unlockAll()
	unlock, err := e.LockWorkspace(w.ID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	j, err := tx.readJournal()
	if err != nil {
		return nil, err
	}
	if j != nil && j.committed() {
		// Never stage again over a committed release: its journal and
		// what it names are the user's files.
		return tx.released(), tx.finish(context.WithoutCancel(ctx))
	}
	if j != nil {
		if err := tx.undoStaging(ctx, j); err != nil {
			return nil, err
		}
	}
	var src *tine.Run
	var forks []*tine.Run
	err = e.store.View(ctx, func(tx tine.Tx) error {
		runs, err := tx.Runs(tine.RunFilter{Workspace: w.ID, State: tine.StateActive})
		for _, r := range runs {
			if r.Role == tine.RoleSource {
				src = r
			} else {
				forks = append(forks, r)
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if !force {
		if err := newDiscardTx(e, w).checkMerged(ctx, forks); err != nil {
			return nil, fmt.Errorf("releasing %s would remove forks: %w", w.Name, err)
		}
	}
	for _, r := range append(forks, src) {
		if r != nil {
			if err := e.rt.StopRun(ctx, Ref{w, r}, tine.EventStop); err != nil {
				return nil, err
			}
		}
	}
	if e.backends.stacking(w.Backend) {
		if src == nil {
			return nil, fmt.Errorf("workspace %s has no source run to release: %w", w.Name, tine.ErrInvalid)
		}
		if err := tx.prepare(ctx, src); err != nil {
			return nil, tx.sayAside(err)
		}
	}
	// Committed: ctx's end (a Ctrl-C) no longer stops anything.
	return tx.released(), tx.sayAside(tx.finish(context.WithoutCancel(ctx)))
}

// released is what Release reports of r's workspace.
func (r *releaseTx) released() *Released {
	return &Released{Workspace: *r.w, Aside: r.aside, AsideNames: r.asideNames}
}

// sayAside is err saying where prepare moved what was beneath the
// workspace's mount, if it moved anything; nil for nil.
func (r *releaseTx) sayAside(err error) error {
	if err == nil || r.aside == "" {
		return err
	}
	return fmt.Errorf("%w (what was written beneath its mount is now in %s)", err, r.aside)
}

func (r *releaseTx) journalPath() string {
	e, w := r.e, r.w
	return e.lay.Workspace(w.ID).ReleaseJournal()
}

// pendingPath is a file that exists while a release is unfinished. It sits
// in the state directory's release/ directory, so that a sweeper that finds
// the workspace's directory without a record takes it for an unfinished
// release (moved to the quarantine), not for a finished one (deleted).
func (r *releaseTx) pendingPath() string {
	e, w := r.e, r.w
	return e.lay.Workspace(w.ID).ReleasePending()
}

// readJournal returns w's release journal, nil if there is none.
func (r *releaseTx) readJournal() (*releaseJournal, error) {
	e, w := r.e, r.w
	b, err := os.ReadFile(r.journalPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var j releaseJournal
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("unreadable release journal %s (the files are safe in %s): %w", r.journalPath(), e.lay.Workspace(w.ID).Dir(), err)
	}
	return &j, nil
}

// writeJournal writes j durably: the file and its directory are
// synced before the rename that makes it visible is relied on.
func (r *releaseTx) writeJournal(j *releaseJournal) error {
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	return atomicfile.Write(r.journalPath(), b, 0o644, atomicfile.Durable)
}

// prepare unmounts the workspace and journals its release, staging a
// verified copy of the source's view first when the layers cannot be
// renamed into the workspace directory. On any error before the journal is
// committed, everything is as it was: the views are mounted again.
func (r *releaseTx) prepare(ctx context.Context, src *tine.Run) (err error) {
	e, w := r.e, r.w
	v, err := e.version(ctx, src.Base)
	if err != nil {
		return err
	}
	br := e.backendRun(w, src)
	if err := mnt.UnmountAll(w.Path); err != nil {
		return inUse(w.Path, err)
	}
	defer func() {
		if err != nil && !r.committed() {
			r.remountLive(context.WithoutCancel(ctx))
		}
	}()
	if r.aside, r.asideNames, err = clearBeneath(w.Path); err != nil {
		return err
	}
	j := &releaseJournal{Path: w.Path, Temp: ".tine-release-" + tine.NewID("")}
	if err := os.MkdirAll(filepath.Dir(r.pendingPath()), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(r.pendingPath(), nil, 0o600); err != nil {
		return err
	}
	layers := append(e.layerPaths(v), filepath.Join(br.Dir, "upper"))
	if canRename(e.lay.Workspace(w.ID).Dir(), w.Path, j.Temp) && !anyRedirect(layers[1:]) {
		if err := r.unmountAll(); err != nil {
			os.Remove(r.pendingPath())
			return err
		}
		j.Mode, j.Phase = relRename, phaseCommitted
		j.Layers = layers
		if j.Dirs, err = layerDirTimes(j.Layers[1:]); err != nil {
			os.Remove(r.pendingPath())
			return err
		}
		os.Remove(filepath.Join(w.Path, markerName))
		if err := faultPoint("release"); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil { // the last point a Ctrl-C stops it
			r.restoreMarker()
			os.Remove(r.pendingPath())
			return err
		}
		if err := r.writeJournal(j); err != nil {
			r.restoreMarker()
			os.Remove(r.pendingPath())
			return err
		}
		return faultPoint("release")
	}
	return r.stage(ctx, br, v, j)
}

// stage copies the source's view into a stage in the workspace directory,
// verifies and syncs it, and commits the journal. A failure (a full disk)
// removes the stage and leaves the workspace as it was.
func (r *releaseTx) stage(ctx context.Context, br layer.Run, v *tine.Version, j *releaseJournal) (err error) {
	e, w := r.e, r.w
	j.Mode, j.Phase = relStage, phaseStaging
	j.Stage = filepath.Join(w.Path, j.Temp+".stage")
	if err := r.writeJournal(j); err != nil {
		os.Remove(r.pendingPath())
		return err
	}
	defer func() {
		if err != nil && !r.committed() {
			err = errors.Join(err, r.dropStage(j))
		}
	}()
	if err := faultPoint("release"); err != nil {
		return err
	}
	// Copy from the view only while it is mounted: an unmounted view is an
	// empty directory.
	if ok, merr := mnt.IsMountpoint(br.View); merr != nil || !ok {
		be, berr := e.backend(w.Backend)
		if berr != nil {
			return berr
		}
		if rs, ok := be.(layer.Restorer); !ok {
			return fmt.Errorf("the source's view is not mounted at %s", br.View)
		} else if err := rs.Restore(ctx, br, e.layerPaths(v)); err != nil {
			return err
		}
	}
	if err := os.Mkdir(j.Stage, 0o700); err != nil {
		return err
	}
	// Processes outside tine may still change the view: an entry that
	// vanishes while it is copied is left out, not an error.
	if err := fstree.Copy(ctx, br.View, j.Stage, fstree.CopyOptions{SkipVanished: true, KeepPins: true}); err != nil {
		return fmt.Errorf("copying the source's files into %s (nothing changed; the workspace is as it was): %w", w.Path, err)
	}
	if err := faultPoint("release"); err != nil {
		return err
	}
	if err := sameTree(br.View, j.Stage); err != nil {
		return fmt.Errorf("the copy of the source's files does not match its view (nothing changed): %w", err)
	}
	if err := syncFS(j.Stage); err != nil {
		return fmt.Errorf("syncing the copy of the source's files: %w", err)
	}
	if err := faultPoint("release"); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil { // the last point a Ctrl-C stops it
		return err
	}
	if err := r.unmountAll(); err != nil {
		return err
	}
	t, err := timesOf(j.Stage)
	if err != nil {
		return err
	}
	t.Path = "."
	j.Dirs = []dirTimes{t}
	j.Phase = phaseCommitted
	os.Remove(filepath.Join(w.Path, markerName))
	if err := r.writeJournal(j); err != nil {
		r.restoreMarker()
		return err
	}
	return faultPoint("release")
}

// committed reports whether w's release journal is committed (or
// unreadable, which is taken for committed: nothing is undone over it).
func (r *releaseTx) committed() bool {
	j, err := r.readJournal()
	return err != nil || j != nil && j.committed()
}

// dropStage undoes a release that never committed: the stage goes, the
// journal after it, and the marker comes back.
func (r *releaseTx) dropStage(j *releaseJournal) error {
	w := r.w
	if j.Stage != "" && filepath.Dir(j.Stage) == w.Path {
		if err := fstree.Purge(j.Stage); err != nil {
			return err
		}
	}
	if err := os.Remove(r.journalPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	os.Remove(r.pendingPath())
	r.restoreMarker()
	return nil
}

// undoStaging rolls back a release interrupted before its journal
// committed, and mounts the workspace again.
func (r *releaseTx) undoStaging(ctx context.Context, j *releaseJournal) error {
	w := r.w
	if err := mnt.UnmountAll(w.Path); err != nil {
		return err
	}
	if err := r.dropStage(j); err != nil {
		return fmt.Errorf("undoing an interrupted release of %s: %w", w.Path, err)
	}
	r.remountLive(ctx)
	return nil
}

func (r *releaseTx) restoreMarker() {
	e, w := r.e, r.w
	p := filepath.Join(w.Path, markerName)
	if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
		os.WriteFile(p, []byte(markerText(w, e.home)), 0o444)
	}
}

// remountLive mounts the views of w's live runs again, and the source's on
// the workspace path, after a release that did not happen.
func (r *releaseTx) remountLive(ctx context.Context) {
	e, w := r.e, r.w
	be, err := e.backend(w.Backend)
	if err != nil {
		e.warn("remounting %s: %v (the next tine command retries)", w.Name, err)
		return
	}
	s := newSweeper(e)
	runs, _, err := s.records(ctx, w.ID)
	if err != nil {
		e.warn("remounting %s: %v (the next tine command retries)", w.Name, err)
		return
	}
	for _, r := range runs {
		if r.Active() {
			if err := s.reconcile(ctx, be, w, r); err != nil {
				e.warn("remounting run %s of %s: %v (the next tine command retries)", r.Name, w.Name, err)
			}
		}
	}
}

func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	sort.Strings(names)
	return names, err
}

// canRename reports whether an entry of dir can be renamed into path (one
// filesystem, one mount), by trying it with a scratch file.
func canRename(dir, path, temp string) bool {
	p := filepath.Join(dir, temp+".probe")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		return false
	}
	q := filepath.Join(path, temp+".probe")
	if err := os.Rename(p, q); err != nil {
		os.Remove(p)
		return false
	}
	os.Remove(q)
	return true
}

// finish rolls a committed release forward (a release that never
// committed is undone instead), then forgets the workspace and moves its
// state directory into the trash, whose emptying deletes it in the
// background (the workspace's views are unmounted by then). Without a journal (a flat backend, whose source view is the
// workspace directory) it only forgets and deletes. It is also what the
// sweeper runs for a workspace with a release journal.
func (r *releaseTx) finish(ctx context.Context) error {
	e, w := r.e, r.w
	j, err := r.readJournal()
	if err != nil {
		return err
	}
	if j != nil && !j.committed() {
		return r.undoStaging(ctx, j)
	}
	if err := r.unmountAll(); err != nil {
		return err
	}
	if j != nil {
		if err := r.rollForward(ctx, j); err != nil {
			return fmt.Errorf("restoring files into %s (the rest are safe in %s; the next tine command retries): %w", w.Path, e.lay.Workspace(w.ID).Dir(), err)
		}
	}
	os.Remove(r.pendingPath())
	if err := faultPoint("release"); err != nil {
		return err
	}
	os.Remove(e.lay.Workspace(w.ID).Dir() + ".lock") // recreated by whoever locks next, if the record stays
	err = e.store.Update(ctx, func(tx tine.Tx) error { return tx.DeleteWorkspace(w.ID) })
	if err != nil {
		return err
	}
	if err := faultPoint("release"); err != nil {
		return err
	}
	if err := e.trash(ctx, KindWorkspace, w.Backend, w.ID, e.lay.Workspace(w.ID).Dir()); err != nil {
		return err
	}
	return faultPoint("release")
}

// rollForward puts every file a committed journal names into the workspace
// directory. Each step consumes its source, so it can be run again after a
// crash at any point.
func (r *releaseTx) rollForward(ctx context.Context, j *releaseJournal) error {
	w := r.w
	m := &mover{ctx: ctx, scratch: filepath.Join(w.Path, j.Temp)}
	if j.Temp == "" {
		m.scratch = filepath.Join(w.Path, ".tine-release-scratch")
	}
	switch j.Mode {
	case relRename:
		for i, l := range j.Layers {
			var err error
			if i == 0 {
				err = m.moveAll(l, w.Path)
			} else {
				err = m.apply(l, ".", w.Path)
			}
			if err != nil {
				return err
			}
		}
	default: // relStage, or an older tine's journal: a complete stage
		if j.Mode == "" {
			os.Remove(filepath.Join(w.Path, markerName))
		}
		if _, err := os.Lstat(j.Stage); err == nil {
			if err := m.moveAll(j.Stage, w.Path); err != nil {
				return err
			}
			if j.Mode == "" {
				if err := fstree.CopyAttrs(j.Stage, w.Path); err != nil {
					return err
				}
			}
		}
	}
	for _, d := range j.Dirs {
		p := filepath.Join(w.Path, d.Path)
		if fi, err := fstree.Lstat(p); err != nil || !fi.IsDir() {
			continue // replaced or deleted by a layer above
		}
		if err := dropOverlayXattrs(p); err != nil {
			return err
		}
		if err := fstree.Lchtimes(p, time.Unix(0, d.Atime), time.Unix(0, d.Mtime)); err != nil {
			return err
		}
	}
	if err := fstree.Purge(m.scratch); err != nil {
		return err
	}
	if j.Mode == relStage {
		if err := os.Remove(j.Stage); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return faultPoint("release")
}

// mover moves entries into the workspace directory for rollForward.
type mover struct {
	ctx     context.Context
	scratch string // where copies are made before they are renamed into place
	moved   int    // entries moved, for progress
}

// moveAll moves every entry of src into dst. An entry in both (a copy a
// crash left after it was renamed into place, before its source was
// deleted) is replaced: the journal vouches for src.
func (m *mover) moveAll(src, dst string) error {
	names, err := readNames(src)
	if err != nil {
		return err
	}
	for _, n := range names {
		s, d := filepath.Join(src, n), filepath.Join(dst, n)
		if _, err := fstree.Lstat(d); err == nil {
			if err := fstree.Purge(d); err != nil {
				return err
			}
		}
		if err := m.move(s, d); err != nil {
			return err
		}
	}
	return nil
}

// apply applies the entries of directory rel of delta layer root onto the
// same directory of dst, consuming them.
func (m *mover) apply(root, rel, dst string) error {
	if err := m.ctx.Err(); err != nil {
		return err
	}
	dir := filepath.Join(root, rel)
	if err := syncDirMeta(dir, filepath.Join(dst, rel)); err != nil {
		return err
	}
	names, err := readNames(dir)
	if err != nil {
		return err
	}
	for _, n := range names {
		r := filepath.Join(rel, n)
		s, d := filepath.Join(root, r), filepath.Join(dst, r)
		fi, err := fstree.Lstat(s)
		if err != nil {
			return err
		}
		target, terr := fstree.Lstat(d)
		switch {
		case isWhiteout(fi):
			if err := fstree.Purge(d); err != nil {
				return err
			}
			if err := faultPoint("release"); err != nil {
				return err
			}
			if err := fstree.Remove(s); err != nil {
				return err
			}
		case fi.IsDir() && !isOpaqueDir(s) && terr == nil && target.IsDir():
			if err := m.apply(root, r, dst); err != nil {
				return err
			}
			if err := removeEmptyDir(s); err != nil {
				return err
			}
		default:
			// A new entry, or one that replaces what the layers below had
			// at its path: an opaque directory, a directory over a file.
			if terr == nil && (fi.IsDir() || target.IsDir()) {
				if err := fstree.Purge(d); err != nil {
					return err
				}
				if err := faultPoint("release"); err != nil {
					return err
				}
			}
			if err := stripOverlay(s); err != nil {
				return err
			}
			if err := m.move(s, d); err != nil {
				return err
			}
			if fi.IsDir() {
				if err := dropOverlayXattrs(d); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// move renames s to d (replacing a non-directory d). Across mounts, or for
// a pinned entry (chattr +i, +a) that cannot be renamed, it copies s to
// scratch, verifies the copy, renames it to d, pins it as s was, and only
// then deletes s (a crash before leaves s to move again).
func (m *mover) move(s, d string) error {
	if err := faultPoint("release"); err != nil {
		return err
	}
	m.moved++
	progress.Report(m.ctx, "moving", m.moved, 0)
	err := fstree.Rename(s, d)
	if err == nil || !(errors.Is(err, syscall.EXDEV) || errors.Is(err, fs.ErrPermission)) {
		return err
	}
	if err := fstree.Purge(m.scratch); err != nil {
		return err
	}
	if err := os.Mkdir(m.scratch, 0o700); err != nil {
		return err
	}
	c := filepath.Join(m.scratch, "entry")
	if err := copyEntry(m.ctx, s, c); err != nil {
		return fmt.Errorf("copying %s into %s: %w", s, filepath.Dir(d), err)
	}
	if err := sameTree(s, c); err != nil {
		return fmt.Errorf("the copy of %s does not match it: %w", s, err)
	}
	if err := syncFS(c); err != nil {
		return err
	}
	if err := faultPoint("release"); err != nil {
		return err
	}
	if err := fstree.Rename(c, d); err != nil {
		return err
	}
	if err := faultPoint("release"); err != nil {
		return err
	}
	if err := pinAs(s, d); err != nil {
		return err
	}
	return fstree.Purge(s)
}

// pinAs gives d the chattr +i and +a of s, unless a directory: the
// journal's directory times are set after every move, and a pinned
// directory's cannot be.
func pinAs(s, d string) error {
	p, err := fstree.ReadPins(s)
	if fi, serr := fstree.Lstat(d); serr != nil || fi.IsDir() {
		return serr
	}
	if err == nil {
		err = fstree.SetPins(d, p)
	}
	return err
}

// removeEmptyDir removes the applied directory s of a layer, which may be
// pinned (chattr +i, +a): a seal keeps the flags of what it copies.
func removeEmptyDir(s string) error {
	err := fstree.Remove(s)
	if errors.Is(err, fs.ErrPermission) && pinned(s) {
		return fstree.Purge(s)
	}
	return err
}

// pinned reports whether p is immutable or append-only.
func pinned(p string) bool {
	pins, err := fstree.ReadPins(p)
	return err == nil && pins != 0
}

// copyEntry copies the entry s (of any type) to d, which must not exist.
func copyEntry(ctx context.Context, s, d string) error {
	fi, err := fstree.Lstat(s)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
		return fstree.Copy(ctx, s, d, fstree.CopyOptions{KeepPins: true})
	}
	if !fi.Mode().IsRegular() {
		// Copy only copies a directory's contents: hand it one holding s.
		hold := filepath.Join(filepath.Dir(d), "hold")
		if err := os.Mkdir(hold, 0o700); err != nil {
			return err
		}
		link := filepath.Join(filepath.Dir(s), filepath.Base(filepath.Dir(d))+".link")
		fstree.RemoveAll(link)
		if err := fstree.Mkdir(link, 0o700); err != nil {
			return err
		}
		defer fstree.RemoveAll(link)
		if err := fstree.Link(s, filepath.Join(link, "e")); err != nil {
			return err
		}
		if err := fstree.Copy(ctx, link, hold, fstree.CopyOptions{}); err != nil {
			return err
		}
		return os.Rename(filepath.Join(hold, "e"), d)
	}
	// A regular file, perhaps pinned (its hard link would be refused).
	in, err := fstree.Open(s)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := fstree.OpenFile(d, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	err = fstree.CopyContents(out, in)
	if err == nil {
		err = out.Truncate(fi.Size())
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fstree.CopyMeta(s, d, fi, fstree.MetaOptions{UserTree: true})
	}
	return err
}

// sameTree returns an error naming the first entry where the trees at a and
// b differ in type, permission bits, content, symlink target or device.
func sameTree(a, b string) error {
	return fstree.WalkDir(a, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(a, p)
		q := filepath.Join(b, rel)
		same, err := fstree.SamePath(p, q)
		if err != nil {
			return err
		}
		if !same {
			return fmt.Errorf("%s differs from %s", q, p)
		}
		return nil
	})
}

// syncFS flushes what was written to the filesystem holding p (sync(2):
// syncfs is Linux-only, and this runs only for copies, which are rare or
// large).
func syncFS(p string) error {
	if _, err := fstree.Lstat(p); err != nil {
		return err
	}
	unix.Sync()
	return nil
}

// layerDirTimes lists the times of every directory of each of layers, in order.
func layerDirTimes(layers []string) ([]dirTimes, error) {
	var out []dirTimes
	for _, l := range layers {
		err := fstree.WalkDir(l, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			t, err := timesOf(p)
			if err != nil {
				return err
			}
			t.Path, _ = filepath.Rel(l, p)
			out = append(out, t)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func timesOf(p string) (dirTimes, error) {
	fi, err := fstree.Lstat(p)
	if err != nil {
		return dirTimes{}, err
	}
	return dirTimes{Atime: fstree.Atime(fi).UnixNano(), Mtime: fi.ModTime().UnixNano()}, nil
}

// isWhiteout reports whether fi is an overlay whiteout (a 0/0 character device).
func isWhiteout(fi fs.FileInfo) bool {
	if fi.Mode().Type() != fs.ModeDevice|fs.ModeCharDevice {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && uint64(st.Rdev) == 0
}

// overlayXattr is the prefix of the extended attributes overlay keeps on
// its layers' entries (opaque marks, origins); a view never shows them.
const overlayXattr = "trusted.overlay."

// isOpaqueDir reports whether the layer directory p hides what the layers
// below have at its path.
func isOpaqueDir(p string) bool {
	v, err := fstree.Lgetxattr(p, overlayXattr+"opaque")
	return err == nil && string(v) == "y"
}

// anyRedirect reports whether a directory of the delta layers was put there
// by a rename (overlay's redirect attribute): its files still lie at the old
// path below, so the layers cannot be applied entry by entry, and release
// copies the mounted view instead.
func anyRedirect(layers []string) bool {
	found := false
	for _, l := range layers {
		_ = fstree.WalkDir(l, func(p string, d fs.DirEntry, err error) error {
			if err != nil || found {
				return filepath.SkipAll
			}
			if d.IsDir() {
				if _, xerr := fstree.Lgetxattr(p, overlayXattr+"redirect"); xerr == nil {
					found = true
					return filepath.SkipAll
				}
			}
			return nil
		})
	}
	return found
}

// stripOverlay removes overlay's marks from the subtree at p before it is
// moved into the workspace: its whiteouts (below p, where nothing lies
// underneath to hide, as p is new or opaque) and overlay's extended
// attributes, except p's own opaque mark, which says what p is until it
// has moved.
func stripOverlay(p string) error {
	return fstree.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if q == p {
			if !d.IsDir() {
				return dropOverlayXattrs(q)
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if isWhiteout(fi) {
			return fstree.Remove(q)
		}
		return dropOverlayXattrs(q)
	})
}

// xattrNames lists p's extended attributes (nil when it has none or the
// filesystem keeps none).
func xattrNames(p string) []string {
	names, err := fstree.Llistxattr(p)
	if err != nil {
		return nil
	}
	return names
}

// overlayPins is where overlay records the chattr +i and +a of an upper
// entry (set through a view) instead of on the inode.
const overlayPins = overlayXattr + "protattr"

// dropOverlayXattrs removes overlay's extended attributes from p, turning
// its record of p's chattr +i and +a into the flags themselves, last (a
// pinned file's attributes cannot be changed). A directory's record is
// dropped: its times are set after every move, which a pin would refuse.
func dropOverlayXattrs(p string) error {
	var pins fstree.Pins
	for _, n := range xattrNames(p) {
		if !strings.HasPrefix(n, overlayXattr) {
			continue
		}
		if n == overlayPins {
			v, _ := fstree.Lgetxattr(p, n)
			pins = fstree.ParsePins(string(v))
		}
		fstree.Lremovexattr(p, n)
	}
	if fi, err := fstree.Lstat(p); err != nil || fi.IsDir() {
		return err
	}
	return fstree.SetPins(p, pins)
}

// syncDirMeta gives directory d the owner, mode and extended attributes of
// s, the same directory in a layer above (times come last, from the
// journal): overlay shows a merged directory with its topmost attributes.
func syncDirMeta(s, d string) error {
	fi, err := fstree.Lstat(s)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for _, n := range xattrNames(s) {
		keep[n] = !strings.HasPrefix(n, overlayXattr)
	}
	for _, n := range xattrNames(d) {
		if !keep[n] {
			fstree.Lremovexattr(d, n)
		}
	}
	return fstree.CopyMeta(s, d, fi, fstree.MetaOptions{UserTree: true})
}

// unmountAll unmounts the workspace path and every run view of w.
func (r *releaseTx) unmountAll() error {
	e, w := r.e, r.w
	if !e.backends.stacking(w.Backend) {
		return nil
	}
	if err := mnt.UnmountAll(w.Path); err != nil {
		return inUse(w.Path, err)
	}
	runs, _ := os.ReadDir(e.lay.Workspace(w.ID).Runs())
	for _, r := range runs {
		if err := mnt.UnmountAll(filepath.Join(e.lay.Workspace(w.ID).Dir(), "runs", r.Name(), "view")); err != nil {
			return err
		}
	}
	return nil
}

// removeTree deletes a state directory, unmounting anything left mounted
// below it first (found in one read of the mount table), so a RemoveAll
// never descends into a live mount.
func removeTree(dir string) error {
	mounts, err := mnt.MountsBelow(dir)
	if err != nil {
		return err
	}
	for _, m := range mounts {
		if err := mnt.UnmountAll(m); err != nil {
			return fmt.Errorf("not removing %s: %s is still mounted: %w", dir, m, err)
		}
	}
	return fstree.Purge(dir)
}
