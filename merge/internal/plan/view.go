package plan

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/tinehq/tine/fstree"
)

// ParentKind says what the nearest non-directory parent of a path is.
type ParentKind int

// Kinds of parent.
const (
	ParentIsDir     ParentKind = iota // every parent is a real directory
	ParentIsLink                      // a parent is a symlink
	ParentIsNotDir                    // a parent is a file or other non-directory
	ParentIsMissing                   // a parent does not exist
)

// Parents describes the parents of a path in a view: all directories, or
// the shallowest one (At) that is not.
type Parents struct {
	Kind ParentKind
	At   string
}

// Reason says why a write beneath ps.At is impossible.
func (ps Parents) Reason() string {
	switch ps.Kind {
	case ParentIsLink:
		return fmt.Sprintf("parent %q is a symlink in target", ps.At)
	case ParentIsNotDir:
		return fmt.Sprintf("parent %q is not a directory in target", ps.At)
	case ParentIsMissing:
		return fmt.Sprintf("parent %q is missing in target", ps.At)
	}
	return ""
}

// View reads one tree by relative slash paths without following a
// symlink in a parent: a path beneath a symlink, a file or a missing
// directory counts as absent. Directory lookups are cached. Every read is
// made beneath the tree's root by descriptor (fstree.Root), never by name,
// so a tree changing meanwhile (a run's view, which its run may be
// flipping between a directory and a symlink to a host path) is never read
// outside itself: a parent that became a symlink since it was looked at is
// an error. The root is opened for each read and closed after, so that a
// View holds nothing open (its root may be a mount to be unmounted).
type View struct {
	root string
	kind int64 // the filesystem type of root (FSKind)
	mu   sync.Mutex
	dirs map[string]Parents // state of each directory's own path
}

// NewView returns a view of the tree at root.
func NewView(root string) *View {
	return &View{root: root, kind: FSKind(root), dirs: map[string]Parents{".": {}}}
}

// Root returns the directory the view reads.
func (v *View) Root() string { return v.root }

// At returns the filesystem path of rel, for messages and for the trees
// of tine's own; a run's files are read through Open and Pin.
func (v *View) At(rel string) string {
	return filepath.Join(v.root, filepath.FromSlash(rel))
}

// beneath calls fn with the view's root open as an fstree.Root.
func (v *View) beneath(fn func(r *fstree.Root) error) error {
	r, err := fstree.OpenRoot(v.root)
	if err != nil {
		return err
	}
	defer r.Close()
	return fn(r)
}

// Open opens rel beneath the view's root for reading, following no
// symlink (fstree.Root.Open); Stat the result to see what it is.
func (v *View) Open(rel string) (f *os.File, err error) {
	err = v.beneath(func(r *fstree.Root) error {
		f, err = r.Open(rel)
		return err
	})
	return f, err
}

// Pin returns a path naming rel through its parent opened beneath the
// view's root (fstree.Root.Pin), for calls that do not follow their last
// component, until release.
func (v *View) Pin(rel string) (p string, release func(), err error) {
	err = v.beneath(func(r *fstree.Root) error {
		p, release, err = r.Pin(rel)
		return err
	})
	return p, release, err
}

// lstat describes rel beneath the view's root.
func (v *View) lstat(rel string) (fi fs.FileInfo, err error) {
	err = v.beneath(func(r *fstree.Root) error {
		fi, err = r.Lstat(rel)
		return err
	})
	if fstree.IsSymlinkErr(err) {
		return nil, fmt.Errorf("a parent of %s became a symlink while it was read: %w", v.At(rel), err)
	}
	return fi, err
}

// Lstat describes rel, or returns nil when it is absent or a parent is not
// a directory (the returned Parents says which).
func (v *View) Lstat(rel string) (fs.FileInfo, Parents, error) {
	ps, err := v.dirState(path.Dir(rel))
	if err != nil || ps.Kind != ParentIsDir {
		return nil, ps, err
	}
	fi, err := v.lstat(rel)
	if os.IsNotExist(err) {
		return nil, ps, nil
	}
	return fi, ps, err
}

// dirState returns whether dir and all its parents are real directories,
// or the shallowest that is not.
func (v *View) dirState(dir string) (Parents, error) {
	v.mu.Lock()
	ps, ok := v.dirs[dir]
	v.mu.Unlock()
	if ok {
		return ps, nil
	}
	ps, err := v.dirState(path.Dir(dir))
	if err != nil || ps.Kind != ParentIsDir {
		return ps, err
	}
	fi, err := v.lstat(dir)
	switch {
	case os.IsNotExist(err):
		ps = Parents{ParentIsMissing, dir}
	case err != nil:
		return ps, err
	case fi.Mode()&fs.ModeSymlink != 0:
		ps = Parents{ParentIsLink, dir}
	case !fi.IsDir():
		ps = Parents{ParentIsNotDir, dir}
	}
	v.mu.Lock()
	v.dirs[dir] = ps
	v.mu.Unlock()
	return ps, nil
}

// Same reports whether rel has the same signature in views va and vb,
// described by a and b (nil when absent there). What the stats tell apart
// is not read, and neither is a file the stats show to be one and the same
// (SameInode: a file the target has not touched since the fork point is
// the fork point's own, on an overlay view or a btrfs snapshot). Both
// sides are read beneath their views (Pin).
func Same(rel string, a, b fs.FileInfo, va, vb *View) (bool, error) {
	switch {
	case a == nil || b == nil:
		return a == nil && b == nil, nil
	case a.Mode().Type() != b.Mode().Type() || Perm(a) != Perm(b):
		return false, nil
	case a.Mode().IsRegular() && a.Size() != b.Size():
		return false, nil
	case SameInode(a, b, SharesInodes(va.kind, vb.kind)):
		return true, nil
	}
	pa, releaseA, err := va.Pin(rel)
	if err != nil {
		return false, err
	}
	defer releaseA()
	pb, releaseB, err := vb.Pin(rel)
	if err != nil {
		return false, err
	}
	defer releaseB()
	return fstree.SamePath(pa, pb)
}

// Perm returns the permission bits of fi, setuid, setgid and sticky included.
func Perm(fi fs.FileInfo) fs.FileMode {
	return fi.Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}

// InParallel calls fn(i) for every i in [0, n) on a few goroutines (the
// work is mostly waiting on the filesystem) and returns the first error.
func InParallel(ctx context.Context, n int, fn func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, min(n, 4*runtime.GOMAXPROCS(0)))
	for w := range errs {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				if errs[w] = fn(i); errs[w] != nil {
					next.Store(int64(n))
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ctx.Err()
}

// ReadDirNames returns the names in directory dir.
func ReadDirNames(dir string) ([]string, error) {
	f, err := fstree.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}
