package fstree

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"syscall"

	"github.com/tinehq/tine/internal/lazyre"
	"github.com/tinehq/tine/internal/progress"
)

// CopyOptions tunes Copy.
type CopyOptions struct {
	// Reflink clones file data with FICLONE instead of copying bytes.
	Reflink bool
	// RequireReflink makes a failed clone an error instead of a byte copy.
	RequireReflink bool
	// SkipVanished copies a tree that something outside tine may be
	// changing meanwhile (a live workspace, a run's upper directory): an
	// entry that disappears from src between the read of its directory and
	// its own copy (git gc removing a loose object directory) is left out,
	// as it is no longer there, and an entry that changes type midway (a
	// file replaced by a directory) is looked at again. Only src's entries
	// below the root are forgiven, and only for being gone or replaced:
	// every other error, and any error on the dst side, still fails Copy.
	SkipVanished bool
	// KeepPins carries the immutable and append-only flags (chattr +i, +a)
	// of every entry below src onto its copy, set once the whole tree is
	// copied (a pinned directory takes no entries, a pinned file no hard
	// link). dst itself never gets them: its caller may still rename it.
	KeepPins bool
	// PinsXattr, with KeepPins, names an extended attribute in which src
	// records flags as letters (ParsePins) rather than on its inodes:
	// overlayfs' trusted.overlay.protattr in an upper directory.
	PinsXattr string
}

// Copy copies the contents of directory src into directory dst, which must
// exist and be empty. Hard links inside src stay hard links inside dst.
//
// Everything a file carries is kept: type (regular, directory, symlink,
// fifo, socket, character and block device, so overlay whiteouts too),
// permission bits with setuid, setgid and sticky, owner (ignored when not
// permitted and not root), access and modification times, and extended
// attributes, trusted.* included when root. src's own metadata is applied to
// dst. File data is cloned with FICLONE when opt.Reflink asks and the
// filesystem can; otherwise only its data extents are copied (see
// CopyContents), so sparse files stay sparse. ctx is checked between
// entries. Inode flags set with chattr (immutable, append-only) are copied
// only with opt.KeepPins; without it dst's files are plain files tine can
// write and remove (a tree with them is removed with Purge).
//
// Copy walks both trees by descriptor: src and dst are resolved by name
// once, and below them each directory is held open while its entries are
// copied, every entry reached through its parent's descriptor
// (/proc/self/fd/N/name on Linux) by calls that do not follow it. So no
// symlink is ever followed, in a parent or the entry itself, not even one
// put in a directory's place while Copy runs: whoever writes into either
// tree meanwhile (a fork in its view, a user in their workspace) cannot
// make Copy read or write outside the two trees. It also makes Copy
// indifferent to the depth of the trees.
func Copy(ctx context.Context, src, dst string, opt CopyOptions) error {
	c := &copier{ctx: ctx, opt: opt, root: os.Geteuid() == 0, links: map[inodeKey]string{}}
	c.xattrs = xattrPolicy{root: c.root}
	return c.copyRoot(src, dst)
}

// copyRoot is Copy with the copier made.
func (c *copier) copyRoot(src, dst string) error {
	if err := checkEmptyDir(dst); err != nil {
		return fmt.Errorf("fstree: copy %s: %w", src, err)
	}
	fi, err := Lstat(src)
	if err == nil && !fi.IsDir() {
		err = &fs.PathError{Op: "copy", Path: src, Err: syscall.ENOTDIR}
	}
	if err != nil {
		return fmt.Errorf("fstree: copy: %w", err)
	}
	c.top, c.dirs = src, map[string]string{}
	err = c.copyTop(src, dst, fi)
	if err == nil {
		err = c.setPins(dst)
	}
	if err != nil {
		return fmt.Errorf("fstree: copy %s to %s: %w", src, dst, c.named(err))
	}
	return nil
}

// copyTop holds src and dst open and copies the one into the other.
func (c *copier) copyTop(src, dst string, fi fs.FileInfo) error {
	s, names, err := c.holdSource(src, ".")
	if err != nil {
		return err
	}
	defer s.f.Close()
	d, err := c.hold(dst, dst, os.O_RDONLY|syscall.O_DIRECTORY)
	if err != nil {
		return err
	}
	defer d.f.Close()
	c.dst = RootOf(d.f)
	return c.copyDir(s, d, fi, names)
}

// copier holds the state of one Copy.
type copier struct {
	ctx     context.Context
	opt     CopyOptions
	root    bool                // running as root: owner and xattr errors count
	xattrs  xattrPolicy         // which extended attributes are copied
	noClone bool                // FICLONE failed once; do not retry per file
	links   map[inodeKey]string // first destination (relative to dst) of each multiply-linked inode
	top     string              // src, as given
	dst     *Root               // dst, held open
	dirs    map[string]string   // the held directories' prefixes, for messages: what each names
	pins    []pinEntry          // flags to set once everything is copied (KeepPins)
	copied  int                 // entries copied, for progress
	// afterLstat, when set (by tests), runs between the lstat of a source
	// entry and its copy: where a live tree changes under Copy. It is given
	// the entry's path below src as given.
	afterLstat func(path string)
}

// pinEntry is a copied entry (its path below dst) and the chattr flags of
// its source.
type pinEntry struct {
	rel  string
	pins Pins
}

// notePins remembers that the copy of rel is to get the flags of its
// source, open as f, when opt.KeepPins asks for them.
func (c *copier) notePins(f *os.File, rel string) error {
	if !c.opt.KeepPins {
		return nil
	}
	p, err := pinsOf(f)
	if err == nil && c.opt.PinsXattr != "" {
		var x Pins
		x, err = xattrPins(f, c.opt.PinsXattr)
		p |= x
	}
	if err == nil && p != 0 {
		c.pins = append(c.pins, pinEntry{rel, p})
	}
	return err
}

// setPins gives every entry notePins remembered its source's flags, each
// reached beneath dst without following a symlink.
func (c *copier) setPins(dst string) error {
	if len(c.pins) == 0 {
		return nil
	}
	r, err := OpenRoot(dst)
	if err != nil {
		return err
	}
	defer r.Close()
	for _, p := range c.pins {
		pinned, release, err := r.Pin(p.rel)
		if err != nil {
			return err
		}
		err = SetPins(pinned, p.pins)
		release()
		if err != nil {
			return err
		}
	}
	return nil
}

// held is a directory Copy holds open while it copies its entries.
type held struct {
	f    *os.File
	path string // names the directory in calls that do not follow their last component
	pfx  string // names it in its entries' paths: through its descriptor where that is possible
	rel  string // its path below the copy's root, slash-separated
}

// child returns the path naming the entry name of h: through h's
// descriptor, so nothing before name is resolved by name.
func (h held) child(name string) string { return filepath.Join(h.pfx, name) }

// hold opens the directory at p (a path naming it without following it,
// but the root's) with flag and records what its prefix names.
func (c *copier) hold(p, name string, flag int) (held, error) {
	f, err := OpenFile(p, flag, 0)
	if err != nil {
		return held{}, err
	}
	h := held{f: f, path: p, pfx: heldPrefix(f, p)}
	c.dirs[h.pfx] = name
	return h, nil
}

// holdSource opens the source directory at p, rel below the root, and
// returns it with the names in it, unsorted. It must still be a directory
// and not a symlink to one.
func (c *copier) holdSource(p, rel string) (held, []string, error) {
	h, err := c.hold(p, c.logical(rel), os.O_RDONLY|openDirFlags)
	if err != nil {
		return held{}, nil, vanished(p, err)
	}
	h.rel = rel
	names, err := h.f.Readdirnames(-1)
	if err != nil {
		h.f.Close()
		return held{}, nil, vanished(p, err)
	}
	return h, names, nil
}

// logical returns the path of the source entry rel as the caller named it.
func (c *copier) logical(rel string) string { return filepath.Join(c.top, filepath.FromSlash(rel)) }

// procPrefix matches the descriptor paths Copy names entries by.
var procPrefix = lazyre.New(`/proc/self/fd/[0-9]+`)

// named returns err with the descriptor paths in its message replaced by
// the paths they name.
func (c *copier) named(err error) error {
	msg := err.Error()
	out := procPrefix().ReplaceAllStringFunc(msg, func(p string) string {
		if n, ok := c.dirs[p]; ok {
			return n
		}
		return p
	})
	if out == msg {
		return err
	}
	return &namedError{msg: out, err: err}
}

// namedError is an error whose message names paths as the caller knows
// them; it unwraps to the error it renames.
type namedError struct {
	msg string
	err error
}

func (e *namedError) Error() string { return e.msg }
func (e *namedError) Unwrap() error { return e.err }

// checkEmptyDir returns an error unless dir is an empty directory.
func checkEmptyDir(dir string) error {
	f, err := Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("%s is not empty (holds %q): %w", dir, names[0], fs.ErrExist)
}

// readNames returns the names in directory dir, unsorted.
func readNames(dir string) ([]string, error) {
	f, err := Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// copyDir copies the contents of the held source directory s, whose
// entries are names, into the held directory d, then gives d the metadata
// of s (fi), times last, so that creating the contents does not disturb
// them.
func (c *copier) copyDir(s, d held, fi fs.FileInfo, names []string) error {
	for _, name := range names {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		if err := c.copyEntry(s.child(name), d.child(name), path.Join(s.rel, name)); err != nil {
			return err
		}
	}
	return c.setMeta(s.path, d.path, fi)
}

// maxTries bounds how often copyEntry looks again at an entry that keeps
// changing type under it.
const maxTries = 3

// copyEntry copies one entry of any type from src to the new path dst; rel
// is its path below the root. With opt.SkipVanished an entry that is gone
// is skipped and one that changed type is tried again.
func (c *copier) copyEntry(src, dst, rel string) error {
	for try := 1; ; try++ {
		err := c.copyOnce(src, dst, rel)
		if err == nil {
			c.copied++
			progress.Report(c.ctx, "copying", c.copied, 0)
		}
		if err == nil || !c.opt.SkipVanished {
			return err
		}
		var se *sourceError
		if !errors.As(err, &se) || se.path != src {
			return err
		}
		if !se.changed {
			return nil // gone: nothing to copy
		}
		if try == maxTries {
			return err
		}
	}
}

// copyOnce copies src to dst, failing with a *sourceError, before creating
// anything at dst, when src is gone or no longer of the type lstat saw.
func (c *copier) copyOnce(src, dst, rel string) error {
	fi, err := Lstat(src)
	if errors.Is(err, syscall.ENOTDIR) {
		// A directory above src was replaced by a file: src is gone.
		return &sourceError{path: src, err: err}
	}
	if err != nil {
		return vanished(src, err)
	}
	if c.afterLstat != nil {
		c.afterLstat(c.logical(rel))
	}
	if fi.IsDir() {
		return c.copySubdir(src, dst, rel, fi)
	}
	st := statOf(fi)
	if first, ok := c.links[st.key()]; ok && st.nlink > 1 {
		return c.link(first, dst)
	}
	fi, err = c.create(src, dst, rel, fi)
	if err != nil {
		return err
	}
	if st := statOf(fi); st.nlink > 1 {
		c.links[st.key()] = rel
	}
	return c.setMeta(src, dst, fi)
}

// copySubdir copies the source directory src, described by fi, to the new
// directory dst, holding both open meanwhile.
func (c *copier) copySubdir(src, dst, rel string, fi fs.FileInfo) error {
	s, names, err := c.holdSource(src, rel)
	if err != nil {
		return err
	}
	defer s.f.Close()
	if err := c.notePins(s.f, rel); err != nil {
		return err
	}
	if err := Mkdir(dst, 0o700); err != nil {
		return err
	}
	d, err := c.hold(dst, filepath.Join(c.dst.Name(), filepath.FromSlash(rel)), os.O_RDONLY|openDirFlags)
	if err != nil {
		return err
	}
	defer d.f.Close()
	return c.copyDir(s, d, fi, names)
}

// link makes dst a hard link to first, a file already copied (its path
// below dst), reached beneath dst without following a symlink.
func (c *copier) link(first, dst string) error {
	p, release, err := c.dst.Pin(first)
	if err != nil {
		return err
	}
	defer release()
	return Link(p, dst)
}

// create makes dst a non-directory of the same type and content as src,
// described by fi, and returns what describes the copy's source best: for
// a regular file the stat of the file it opened.
func (c *copier) create(src, dst, rel string, fi fs.FileInfo) (fs.FileInfo, error) {
	switch t := fi.Mode().Type(); {
	case t == 0:
		return c.copyFile(src, dst, rel)
	case t == fs.ModeSymlink:
		target, err := Readlink(src)
		if err != nil {
			return nil, vanished(src, err)
		}
		return fi, Symlink(target, dst)
	case isSpecial(t):
		return fi, mknod(dst, t, statOf(fi).rdev)
	default:
		return nil, &fs.PathError{Op: "copy", Path: src, Err: fmt.Errorf("unsupported file type %v", t)}
	}
}

// copyFile copies the regular file src to the new file dst and returns the
// stat of the file it copied. src is opened without following a symlink and
// without blocking on a fifo, in case it was replaced by one meanwhile.
func (c *copier) copyFile(src, dst, rel string) (fs.FileInfo, error) {
	in, err := OpenFile(src, os.O_RDONLY|openFileFlags, 0)
	if err != nil {
		return nil, vanished(src, err)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &sourceError{path: src, changed: true, err: fmt.Errorf("%s: became a %v while being copied", src, fi.Mode().Type())}
	}
	out, err := OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := c.notePins(in, rel); err != nil {
		out.Close()
		return nil, err
	}
	if err := c.fill(out, in); err != nil {
		out.Close()
		return nil, err
	}
	return fi, out.Close()
}

// fill writes in's data into the empty file out: a clone when asked for and
// possible, its data extents otherwise.
func (c *copier) fill(out, in *os.File) error {
	if c.opt.Reflink && !c.noClone {
		err := cloneFile(out, in)
		if err == nil {
			return nil
		}
		if c.opt.RequireReflink {
			return err
		}
		c.noClone = true
	}
	if err := copyContents(out, in); err != nil {
		return fmt.Errorf("copy %s to %s: %w", in.Name(), out.Name(), err)
	}
	return nil
}

// sourceError is a failure on an entry of the source that says it is gone
// (ENOENT) or was replaced by another type of file (changed). Copy with
// SkipVanished forgives it for that entry; otherwise it reads as err.
type sourceError struct {
	path    string
	changed bool
	err     error
}

func (e *sourceError) Error() string { return e.err.Error() }
func (e *sourceError) Unwrap() error { return e.err }

// vanished wraps err, from an operation on the source entry path, in a
// *sourceError if it says path is gone or no longer of the type expected:
// ENOENT (gone), ENOTDIR (a directory replaced by a file), ELOOP (replaced
// by a symlink, refused by O_NOFOLLOW), EINVAL from readlink (no longer a
// symlink). Other errors are returned as they are.
func vanished(path string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &sourceError{path: path, err: err}
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.ELOOP), errors.Is(err, syscall.EINVAL):
		return &sourceError{path: path, changed: true, err: err}
	}
	return err
}

// setMeta gives dst the owner, permission bits, extended attributes and
// times of src (described by fi), in the order that keeps each: chown
// clears setuid bits and capabilities, so it comes first.
func (c *copier) setMeta(src, dst string, fi fs.FileInfo) error {
	st := statOf(fi)
	if err := c.chown(dst, st); err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		if err := lchmod(dst, permBits(fi)); err != nil {
			return err
		}
	}
	if err := copyXattrs(src, dst, c.xattrs); err != nil && !c.goneMeanwhile(src, err) {
		return err
	}
	return lchtimes(dst, fi.Mode(), st.atime, fi.ModTime())
}

// MetaOptions tunes CopyMeta.
type MetaOptions struct {
	// UserTree says dst is in a user's tree rather than a layer: overlayfs'
	// own extended attributes (trusted.overlay.* and user.overlay.*, which
	// mark whiteouts, opaque directories and redirects inside a layer) are
	// left out, and an attribute dst's filesystem or tine's privileges do not
	// allow (ENOTSUP, EPERM) is skipped instead of failing. Without it every
	// attribute is copied, as Copy copies layers.
	UserTree bool
}

// CopyMeta gives the existing dst the metadata of src, described by fi,
// as Copy gives each entry it copies: owner (ignored when not permitted and
// not root), permission bits with setuid, setgid and sticky (not for a
// symlink), extended attributes (trusted.* included when root), and access
// and modification times, in the order that keeps each. Neither is followed
// if a symlink. It is the one metadata copy: merge stages what it writes
// into a user's tree through it (o.UserTree).
func CopyMeta(src, dst string, fi fs.FileInfo, o MetaOptions) error {
	c := &copier{root: os.Geteuid() == 0}
	c.xattrs = xattrPolicy{root: c.root, userTree: o.UserTree}
	if err := c.setMeta(src, dst, fi); err != nil {
		return fmt.Errorf("fstree: metadata of %s onto %s: %w", src, dst, err)
	}
	return nil
}

// xattrPolicy says which extended attributes a copy carries and which
// failures it forgives.
type xattrPolicy struct {
	root     bool // running as root: trusted.* are copied, and refusals count
	userTree bool // MetaOptions.UserTree
}

// goneMeanwhile reports whether err, from reading src's extended
// attributes after its copy was made, only says src has gone since, which
// SkipVanished forgives: what was copied was there.
func (c *copier) goneMeanwhile(src string, err error) bool {
	var pe *fs.PathError
	return c.opt.SkipVanished && errors.As(err, &pe) && pe.Path == src &&
		(errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR))
}

// chown gives dst the owner in st, ignoring refusals when not root.
func (c *copier) chown(dst string, st inode) error {
	err := Lchown(dst, st.uid, st.gid)
	if err == nil || errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	if !c.root && (errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EINVAL)) {
		return nil
	}
	return err
}

// CopyAttrs gives dst the owner, permission bits and times of src, without
// copying content or extended attributes: it makes a directory that stands
// in for another (an overlay upper, a workspace root) look like it.
func CopyAttrs(src, dst string) error {
	fi, err := Lstat(src)
	if err != nil {
		return fmt.Errorf("fstree: attributes of %s: %w", src, err)
	}
	c := &copier{root: os.Geteuid() == 0}
	st := statOf(fi)
	if err := c.chown(dst, st); err != nil {
		return fmt.Errorf("fstree: chown %s: %w", dst, err)
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		if err := Chmod(dst, permBits(fi)); err != nil {
			return fmt.Errorf("fstree: chmod %s: %w", dst, err)
		}
	}
	return lchtimes(dst, fi.Mode(), st.atime, fi.ModTime())
}
