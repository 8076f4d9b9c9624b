package overlay

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/progress"
	"github.com/tinehq/tine/layer"
	"golang.org/x/sys/unix"
)

var _ layer.Incremental = (*Backend)(nil)

// ChainMax is layer.ChainMax, the longest chain of incremental seals.
const ChainMax = layer.ChainMax

// mkdirLayer makes a directory of a new layer; tests count its calls.
var mkdirLayer = fstree.Mkdir

// redirectMax is the longest redirect SealOnto writes; a directory whose
// path in the previous version is longer is copied instead. Overlay's own
// default limit for the redirects it makes is 256.
const redirectMax = 256

// SealOnto seals r, whose view may stay mounted and in use, into the new
// layer l. When the manifest of prev's top layer (written by the seal
// that made it) is still there, l gets only what changed in r's upper
// directory since: entries whose inode or ctime differ, a whiteout for
// each entry gone, a directory's mark (opaque, or a redirect to where the
// previous version has it) where it is no longer the same directory; the
// version is prev plus l. Otherwise l is a copy of the whole upper
// directory over base. Either way it writes l's manifest for the next seal.
// When nothing changed since prev was sealed (the change tracker vouches
// for it, or the walk finds it), no layer is made: it returns prev
// (SealCost.Unchanged).
// Hard links, extended attributes, sparse files and long paths are kept.
func (b *Backend) SealOnto(ctx context.Context, r layer.Run, base, prev []string, l string) ([]string, layer.SealCost, error) {
	if len(base)+1 > b.maxDepth {
		paths, err := b.Seal(ctx, r, base, l) // compacts
		return paths, layer.SealCost{Whole: true}, err
	}
	stamp, err := takeStamp(r)
	if err != nil {
		return nil, layer.SealCost{}, err
	}
	old := loadManifest(r, base, prev)
	if old != nil && (len(prev)+1 > b.maxDepth || len(prev)-len(base) >= ChainMax) {
		old = nil
	}
	s := &sealer{ctx: ctx, upper: upper(r), view: r.View, out: l, old: old, stamp: stamp}
	s.startTracking(r)
	if s.nothingChanged() {
		return slices.Clone(prev), layer.SealCost{Pruned: true, Unchanged: true}, nil
	}
	err = s.walk(base)
	if errors.Is(err, errLinked) {
		// A hard link whose other names may be in directories the
		// tracker left out: walk everything, keeping the link.
		if err = os.RemoveAll(l); err == nil {
			s.hot, s.cost.Pruned = nil, false
			err = s.walk(base)
		}
	}
	if err != nil {
		s.endTracking(false)
		return nil, s.cost, fmt.Errorf("overlay: seal %s: %w", r.ID, err)
	}
	if s.same {
		// The walk found what the tracker could not vouch for: nothing
		// changed since prev. No layer; prev's manifest still holds.
		if err := os.RemoveAll(l); err != nil {
			s.endTracking(false)
			return nil, s.cost, fmt.Errorf("overlay: seal %s: %w", r.ID, err)
		}
		s.next.Top = s.old.Top
		s.endTracking(true)
		s.cost.Unchanged = true
		return slices.Clone(prev), s.cost, nil
	}
	keep := ""
	out := append([]string{}, base...)
	if old != nil {
		keep, out = old.Top, append(out, prev[len(base):]...)
	}
	if err := s.next.save(r, keep); err != nil {
		s.endTracking(false)
		return nil, s.cost, err
	}
	s.endTracking(true)
	return append(out, l), s.cost, nil
}

// nothingChanged reports whether the change tracker vouches that nothing
// in the upper directory changed since the previous seal: no directory it
// knows changed (the root's own changes are reported in the root), and no
// inode of the previous manifest did. The version is then the previous
// one's layers, and no layer is made.
func (s *sealer) nothingChanged() bool {
	return s.old != nil && s.hot != nil && len(s.hot) == 0
}

// errLinked stops a walk the tracker pruned at a file with more than one
// link.
var errLinked = errors.New("a file with hard links")

// walk seals the upper directory into a new directory s.out.
func (s *sealer) walk(base []string) error {
	if err := os.Mkdir(s.out, 0o755); err != nil {
		return err
	}
	cp, err := fstree.NewEntryCopier(s.ctx, sealCopy, s.upper, s.out)
	if err != nil {
		return err
	}
	defer cp.Close()
	s.cp, s.next, s.fhs, s.open, s.made = cp, newManifest(base, s.out), nil, nil, 0
	s.cost = layer.SealCost{Whole: s.old == nil, Pruned: s.hot != nil}
	return s.root()
}

// startTracking asks the change tracker, when the process runs one
// (Track), which directories changed since the last seal, so the walk
// skips the others (hot names those changed and their parents).
func (s *sealer) startTracking(r layer.Run) {
	s.tr = current()
	if s.tr == nil {
		return
	}
	fsid, err := fsID(s.upper)
	if err != nil {
		s.tr = nil
		return
	}
	s.fsid, s.fhOK = fsid, true
	top := ""
	if s.old != nil {
		top = s.old.Top
	}
	dirty, inos, ok := s.tr.begin(s.upper, r.Dir, top)
	// Hard links: a change through one name leaves the directories of
	// the others unnamed, so a version with any is walked whole.
	if ok && s.old != nil && !s.old.linkd {
		s.hot = s.old.hot(dirty, inos)
	}
}

// endTracking tells the tracker the seal is over: ok, its new manifest's
// directories are the ones to report on.
func (s *sealer) endTracking(ok bool) {
	if s.tr != nil {
		if ok {
			s.next.index()
		}
		s.tr.commit(s.upper, s.next, s.fhs, ok && s.fhOK, s.linked)
	}
}

// track gives the tracker the upper directory rel before the walk reads
// it, and returns its handle ("" without a tracker).
func (s *sealer) track(rel string) string {
	if s.tr == nil {
		return ""
	}
	h, err := dirHandle(s.fsid, filepath.Join(s.upper, rel))
	if err != nil {
		s.fhOK = false
		return ""
	}
	s.tr.know(s.upper, h)
	s.fhs = append(s.fhs, h)
	return h
}

// pruned reports whether the tracker says nothing changed at or below
// the directory the previous version has at low.
func (s *sealer) pruned(low below) bool {
	return s.hot != nil && low.ok && !s.hot[low.path]
}

// carry records in the new manifest, below rel, what the previous
// version has below low: a directory the tracker says is unchanged.
func (s *sealer) carry(low, rel string) {
	for _, name := range s.old.kids[low] {
		o := *s.old.at(joinRel(low, name))
		s.next.add(joinRel(rel, name), o)
		if o.FH != "" {
			s.fhs = append(s.fhs, o.FH)
		}
		if o.Kind == kindDir || o.Kind == kindOpaque {
			s.carry(joinRel(low, name), joinRel(rel, name))
		}
	}
}

// takeStamp returns the current ctime of r's filesystem, read back from a
// file it touches: the filesystem's clock (coarser than the system's)
// stamps every change after it with a ctime at least as late.
func takeStamp(r layer.Run) (int64, error) {
	p := filepath.Join(r.Dir, "seal.stamp")
	os.Remove(p)
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		return 0, err
	}
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return 0, err
	}
	return st.Ctim.Nano(), nil
}

// sealer is one SealOnto's walk of the upper directory.
type sealer struct {
	ctx              context.Context
	upper, view, out string
	old              *manifest // nil: copy everything as it is (a whole delta over base)
	next             *manifest
	stamp            int64
	cp               *fstree.EntryCopier
	cost             layer.SealCost
	// The change tracker (nil: none runs), the directories it says
	// changed and their parents, by path in old (nil: walk everything),
	// and the handles of the directories in next.
	tr     *tracker
	fsid   []byte
	hot    map[string]bool
	fhs    []string
	fhOK   bool
	linked bool // met a file with more than one link
	// same is set when the walk found nothing changed since the previous
	// seal, root included: no layer is needed.
	same bool
	// open are the directories being walked below the root, outermost
	// first; the first made of them exist in out. A directory is made
	// only when something is written at or below it (need).
	open []string
	made int
}

// enter starts the walk of the upper directory rel, not made in out yet.
func (s *sealer) enter(rel string) { s.open = append(s.open, rel) }

// leave ends the walk of the innermost directory and reports whether it
// was made in out.
func (s *sealer) leave() bool {
	made := s.made == len(s.open)
	s.open = s.open[:len(s.open)-1]
	s.made = min(s.made, len(s.open))
	return made
}

// need makes in out the directories being walked that are not made yet,
// before something is written into the innermost one.
func (s *sealer) need() error {
	for ; s.made < len(s.open); s.made++ {
		if err := mkdirLayer(filepath.Join(s.out, s.open[s.made]), 0o700); err != nil {
			return err
		}
	}
	return nil
}

// below is where the previous version holds a directory's former
// contents, beneath the new layer: at path, or nowhere (ok false).
type below struct {
	path string
	ok   bool
}

func (b below) join(name string) below { return below{joinRel(b.path, name), b.ok} }

// ent is what the walk needs of an entry's stat.
type ent struct {
	kind         uint8
	nlink        uint32
	ino, rdev    uint64
	ctime, btime int64
	size         int64
}

func (s *sealer) root() error {
	st, err := statEntry(s.upper)
	if err != nil {
		return err
	}
	low := below{ok: s.old != nil}
	fh := s.track("")
	if s.pruned(low) {
		o := s.old.at("")
		s.next.add("", mentry{Ino: st.ino, Btime: st.btime, Kind: kindDir, Stamp: o.Stamp, FH: fh})
		s.carry("", "")
		return s.meta("", false) // the top layer's root is the version's
	}
	wrote, err := s.dir("", low, s.old == nil)
	if err != nil {
		return err
	}
	s.next.add("", mentry{Ino: st.ino, Btime: st.btime, Kind: kindDir, Stamp: s.stamp, FH: fh})
	if s.old != nil && !wrote && s.rootSame(st) {
		s.same = true // nothing below the root changed, nor the root itself
		return nil
	}
	return s.meta("", s.old == nil)
}

// rootSame reports whether the upper directory's root, described by st,
// is as the previous seal left it: its own metadata unchanged since.
func (s *sealer) rootSame(st ent) bool {
	o := s.old.at("")
	return o != nil && o.Kind == kindDir && st.ctime < o.Stamp
}

// dir seals the entries of the upper directory rel into out/rel, which
// exists, and reports whether it wrote anything there. Entries that are
// the same as in the previous version, at low, are left to it; entries it
// had that are gone become whiteouts. verbatim copies every entry as it
// is (a whole delta).
func (s *sealer) dir(rel string, low below, verbatim bool) (bool, error) {
	names, err := readNames(filepath.Join(s.upper, rel))
	if err != nil && !gone(err) {
		return false, err
	}
	wrote := false
	present := make(map[string]bool, len(names))
	for _, name := range names {
		if err := s.ctx.Err(); err != nil {
			return false, err
		}
		crel := joinRel(rel, name)
		st, err := statEntry(filepath.Join(s.upper, crel))
		if gone(err) {
			continue
		}
		if err != nil {
			return false, err
		}
		var there, w bool
		if st.kind == kindDir {
			there, w, err = s.subdir(crel, st, low.join(name), verbatim)
		} else {
			there, w, err = s.entry(crel, st, low.join(name), verbatim)
		}
		if err != nil {
			return false, err
		}
		present[name], wrote = there, wrote || w
	}
	if !low.ok {
		return wrote, nil
	}
	for _, name := range s.old.kids[low.path] {
		o := s.old.at(joinRel(low.path, name))
		if present[name] || o.Kind == kindWhiteout {
			continue
		}
		if s.hot != nil && s.old.linked(joinRel(low.path, name)) {
			return false, errLinked // its other names now have one link less
		}
		if err := s.need(); err != nil {
			return false, err
		}
		if err := fstree.Mknod(filepath.Join(s.out, rel, name), fs.ModeDevice|fs.ModeCharDevice, 0); err != nil {
			return false, err
		}
		s.cost.Files++
		wrote = true
	}
	return wrote, nil
}

// entry seals the non-directory rel, described by st, whose former
// version (if any) is at low in the previous version. It reports whether
// rel is still there and whether it copied it.
func (s *sealer) entry(rel string, st ent, low below, verbatim bool) (bool, bool, error) {
	if st.nlink > 1 && st.kind == kindFile {
		s.linked = true
		if s.hot != nil {
			return false, false, errLinked
		}
	}
	if !verbatim && low.ok {
		if o := s.old.at(low.path); o != nil && s.unchanged(o, st) {
			s.next.add(rel, *o)
			return true, false, nil
		}
	}
	if s.hot != nil && low.ok && s.old.linked(low.path) {
		return false, false, errLinked // replaced: its other names have one link less
	}
	if err := s.need(); err != nil {
		return false, false, err
	}
	dst := filepath.Join(s.out, rel)
	if err := s.cp.Copy(filepath.ToSlash(rel)); err != nil {
		return false, false, err
	}
	fi, err := fstree.Lstat(dst)
	if gone(err) {
		return false, false, nil // gone while copied
	}
	if err != nil {
		return false, false, err
	}
	s.cost.Files++
	progress.Report(s.ctx, "copying", s.cost.Files, 0)
	if fi.Mode().IsRegular() {
		s.cost.Bytes += fi.Size()
	}
	s.next.add(rel, mentry{Ino: st.ino, Btime: st.btime, Kind: st.kind, Stamp: s.stamp, Linked: st.kind == kindFile && st.nlink > 1})
	return true, true, nil
}

// unchanged reports whether the upper entry st is the one the previous
// version shows, o, as it was then. A whiteout is a whiteout whatever its
// inode (overlay shares one inode among its whiteouts).
func (s *sealer) unchanged(o *mentry, st ent) bool {
	if st.kind == kindWhiteout || o.Kind == kindWhiteout {
		return st.kind == o.Kind
	}
	return o.Kind == st.kind && o.Ino != 0 && o.Ino == st.ino && sameBirth(o.Btime, st.btime) && st.ctime < o.Stamp
}

func sameBirth(a, b int64) bool { return a == 0 || b == 0 || a == b }

// How an incremental seal writes a directory of the upper directory.
const (
	asIs     = iota // the whole delta: as it is, overlay marks included
	merged          // plain: what the previous version has at the same place shows through
	redirect        // its former contents are elsewhere in the previous version
	opaque          // new: hides everything below it
	viewCopy        // a directory renamed from the version below the delta: copied from the view
)

// subdir seals the upper directory rel, described by st, whose former
// contents (if any) are at low in the previous version. It reports, as
// entry does, whether it is still there and whether it wrote anything.
func (s *sealer) subdir(rel string, st ent, low below, verbatim bool) (bool, bool, error) {
	if s.hot != nil && low.ok {
		if o := s.old.at(low.path); o != nil && o.Kind == kindFile && o.Linked {
			return false, false, errLinked // replaced by a directory
		}
	}
	how, from := s.classify(rel, st, low, verbatim)
	if s.hot != nil && (how == opaque || how == viewCopy) && low.ok && s.old.linked(low.path) {
		return false, false, errLinked // what it hides had files linked elsewhere
	}
	if how == merged && s.pruned(low) && s.unchangedDir(rel, st, low, how) {
		o := s.old.at(low.path)
		s.next.add(rel, mentry{Ino: st.ino, Btime: st.btime, Kind: o.Kind, Stamp: o.Stamp, FH: o.FH})
		if o.FH != "" {
			s.fhs = append(s.fhs, o.FH)
		}
		s.carry(low.path, rel)
		return true, false, nil
	}
	fh := s.track(rel)
	s.enter(rel)
	if how == viewCopy {
		defer s.leave()
		if err := s.need(); err != nil {
			return false, false, err
		}
		return s.copyView(rel, st)
	}
	inner := below{}
	switch how {
	case merged:
		inner = below{low.path, low.ok}
	case redirect:
		inner = below{from, true}
	}
	wrote, err := s.dir(rel, inner, verbatim)
	if err == nil && (wrote || !s.unchangedDir(rel, st, low, how)) {
		err = s.need() // kept: made now if nothing below it was written
	}
	made := s.leave()
	if err != nil {
		return false, false, err
	}
	dst := filepath.Join(s.out, rel)
	if !made {
		o := s.old.at(low.path)
		s.next.add(rel, mentry{Ino: st.ino, Btime: st.btime, Kind: o.Kind, Stamp: o.Stamp, FH: fh})
		return true, false, nil // nothing changed here
	}
	if !wrote && s.unchangedDir(rel, st, low, how) {
		o := s.old.at(low.path)
		s.next.add(rel, mentry{Ino: st.ino, Btime: st.btime, Kind: o.Kind, Stamp: o.Stamp, FH: fh})
		return true, false, fstree.Remove(dst) // made for an entry gone since
	}
	if err := s.meta(rel, verbatim); err != nil {
		if gone(err) {
			return false, false, fstree.Purge(dst)
		}
		return false, false, err
	}
	if err := s.mark(dst, how, from); err != nil {
		return false, false, err
	}
	kind := st.kind
	if isOpaque(filepath.Join(s.upper, rel)) {
		kind = kindOpaque
	}
	s.cost.Files++
	s.next.add(rel, mentry{Ino: st.ino, Btime: st.btime, Kind: kind, Stamp: s.stamp, FH: fh})
	return true, true, nil
}

// unchangedDir reports whether the upper directory rel, described by st
// and written as how, is the directory the previous version has at low,
// unchanged since: when nothing below it changed either, the new layer
// leaves it to the previous version.
func (s *sealer) unchangedDir(rel string, st ent, low below, how int) bool {
	if how != merged || !low.ok {
		return false
	}
	o := s.old.at(low.path)
	return o != nil && st.ctime < o.Stamp
}

// classify decides how the upper directory rel is written, and for a
// redirect, where the previous version has its former contents.
func (s *sealer) classify(rel string, st ent, low below, verbatim bool) (int, string) {
	if verbatim {
		return asIs, ""
	}
	p := filepath.Join(s.upper, rel)
	up := isOpaque(p)
	var o *mentry
	if low.ok {
		o = s.old.at(low.path)
	}
	if o != nil && (o.Kind == kindDir || o.Kind == kindOpaque) &&
		(o.Ino == 0 || o.Ino == st.ino && sameBirth(o.Btime, st.btime)) && (!up || o.Kind == kindOpaque) {
		return merged, ""
	}
	if st.btime != 0 {
		if from, ok := s.old.byDir[dirKey{st.ino, st.btime}]; ok && len(from)+1 <= redirectMax {
			return redirect, from
		}
	}
	switch {
	case up:
		return opaque, ""
	case hasRedirect(p):
		return viewCopy, ""
	case o != nil:
		return opaque, "" // something else was there
	}
	return merged, ""
}

// mark gives the new layer's directory dst the overlay mark how asks for.
func (s *sealer) mark(dst string, how int, from string) error {
	switch how {
	case opaque:
		return fstree.Lsetxattr(dst, "trusted.overlay.opaque", []byte("y"))
	case redirect:
		return fstree.Lsetxattr(dst, "trusted.overlay.redirect", []byte("/"+from))
	}
	return nil
}

// meta gives out/rel the metadata of upper/rel: with overlay's own
// attributes when verbatim, without them otherwise (the new layer's
// directory is marked for what it is in the new stack, by mark).
func (s *sealer) meta(rel string, verbatim bool) error {
	src := filepath.Join(s.upper, rel)
	fi, err := fstree.Lstat(src)
	if err != nil {
		return err
	}
	return fstree.CopyMeta(src, filepath.Join(s.out, rel), fi, fstree.MetaOptions{UserTree: !verbatim})
}

// copyView copies the directory rel as the run's view shows it: a
// directory renamed from the version below the run's delta, whose former
// place in the previous version the seal cannot name. The entries of the
// upper directory it copied are recorded with their inode unknown, so the
// next seal compares them by path (and copies the files again), while
// what came from below the delta stays in the copy.
func (s *sealer) copyView(rel string, st ent) (bool, bool, error) {
	dst := filepath.Join(s.out, rel)
	if err := fstree.Copy(s.ctx, filepath.Join(s.view, rel), dst, sealCopy); err != nil {
		if gone(err) {
			return false, false, fstree.Purge(dst)
		}
		return false, false, err
	}
	if err := fstree.Lsetxattr(dst, "trusted.overlay.opaque", []byte("y")); err != nil {
		return false, false, err
	}
	s.next.add(rel, mentry{Kind: kindDir, Stamp: s.stamp, FH: s.track(rel)})
	err := fstree.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dst {
			return err
		}
		sub, _ := filepath.Rel(s.out, p)
		s.cost.Files++
		if info, err := d.Info(); err == nil && info.Mode().IsRegular() {
			s.cost.Bytes += info.Size()
		}
		up := filepath.Join(s.upper, sub)
		e, err := statEntry(up)
		if err != nil {
			return nil // not in the delta (or gone): it stays as copied
		}
		fh := ""
		if e.kind == kindDir {
			fh = s.track(sub)
			if isOpaque(up) {
				e.kind = kindOpaque
			}
		}
		s.next.add(filepath.ToSlash(sub), mentry{Kind: e.kind, Stamp: s.stamp, FH: fh})
		return nil
	})
	return true, true, err
}

// gone reports whether err says an entry is no longer there.
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// readNames lists directory dir.
func readNames(dir string) ([]string, error) {
	f, err := fstree.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// statEntry stats p without following a symlink: statx for the birth
// time where the path fits one call, lstat (any length) otherwise.
func statEntry(p string) (ent, error) {
	if len(p) < unix.PathMax-64 {
		var sx unix.Statx_t
		err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS|unix.STATX_BTIME, &sx)
		if err != nil {
			return ent{}, &fs.PathError{Op: "statx", Path: p, Err: err}
		}
		e := ent{ino: sx.Ino, nlink: sx.Nlink, rdev: uint64(unix.Mkdev(sx.Rdev_major, sx.Rdev_minor)), size: int64(sx.Size),
			ctime: sx.Ctime.Sec*1e9 + int64(sx.Ctime.Nsec)}
		if sx.Mask&unix.STATX_BTIME != 0 {
			e.btime = sx.Btime.Sec*1e9 + int64(sx.Btime.Nsec)
		}
		e.kind = kindOfMode(uint32(sx.Mode), e.rdev)
		return e, nil
	}
	fi, err := fstree.Lstat(p)
	if err != nil {
		return ent{}, err
	}
	st := fi.Sys().(*syscall.Stat_t)
	e := ent{ino: st.Ino, nlink: uint32(st.Nlink), rdev: st.Rdev, size: st.Size, ctime: st.Ctim.Nano()}
	e.kind = kindOfMode(st.Mode, e.rdev)
	return e, nil
}

func kindOfMode(mode uint32, rdev uint64) uint8 {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return kindDir
	case unix.S_IFCHR:
		if rdev == 0 {
			return kindWhiteout
		}
	}
	return kindFile
}
