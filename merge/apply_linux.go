//go:build linux

package merge

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/merge/internal/plan"
	"golang.org/x/sys/unix"
)

// oNoFollow makes opening a symlink fail instead of following it.
const oNoFollow = unix.O_NOFOLLOW

// txTree is the target directory of an apply, held open as an
// fstree.Root: every path is resolved beneath it with
// openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), so no symlink is ever
// followed, inside the target or out of it.
type txTree struct {
	root string
	r    *fstree.Root
	fd   int // r's descriptor
}

// openTxTree opens directory root.
func openTxTree(root string) (*txTree, error) {
	r, err := fstree.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	return &txTree{root: root, r: r, fd: r.Fd()}, nil
}

// close releases the tree.
func (t *txTree) close() error { return t.r.Close() }

// abs returns the filesystem path of rel, for reporting and for the staging
// directory, which the tree created itself.
func (t *txTree) abs(rel string) string { return filepath.Join(t.root, filepath.FromSlash(rel)) }

// openBeneath opens rel (a slash path, "." for the root) beneath the tree
// with flags (fstree.Root.OpenAt).
func (t *txTree) openBeneath(rel string, flags int) (int, error) { return t.r.OpenAt(rel, flags) }

// parent opens the directory holding rel and returns it with rel's name.
func (t *txTree) parent(rel string) (int, string, error) {
	fd, err := t.openBeneath(path.Dir(rel), unix.O_PATH|unix.O_DIRECTORY)
	return fd, path.Base(rel), err
}

// lstat returns the type and permission bits of rel, and whether it exists.
// A missing parent, or one that is not a directory (a file, a symlink, which
// is never followed), means rel does not exist in the tree.
func (t *txTree) lstat(rel string) (fs.FileMode, bool, error) {
	pfd, name, err := t.parent(rel)
	if isAbsentErr(err) || errors.Is(err, unix.ELOOP) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if isAbsentErr(err) {
			return 0, false, nil
		}
		return 0, false, &os.PathError{Op: "fstatat", Path: t.abs(rel), Err: err}
	}
	return modeOfStat(st.Mode), true, nil
}

// isAbsentErr reports whether err means a path or one of its parents does
// not exist (or is not a directory).
func isAbsentErr(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)
}

// modeOfStat converts a stat(2) mode to an fs.FileMode.
func modeOfStat(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	for _, b := range []struct {
		bit  uint32
		mode fs.FileMode
	}{{unix.S_ISUID, fs.ModeSetuid}, {unix.S_ISGID, fs.ModeSetgid}, {unix.S_ISVTX, fs.ModeSticky}} {
		if m&b.bit != 0 {
			mode |= b.mode
		}
	}
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFREG:
	default:
		mode |= fs.ModeIrregular
	}
	return mode
}

// unixPerm converts permission bits to a stat(2) mode.
func unixPerm(m fs.FileMode) uint32 {
	out := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		out |= unix.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		out |= unix.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		out |= unix.S_ISVTX
	}
	return out
}

// rename moves from to to (both relative) without replacing anything.
func (t *txTree) rename(from, to string) error {
	return t.renameWith(from, to, func(ffd int, fname string, tfd int, tname string) error {
		err := unix.Renameat2(ffd, fname, tfd, tname, unix.RENAME_NOREPLACE)
		if err == unix.EINVAL {
			err = renameChecked(ffd, fname, tfd, tname) // no RENAME_NOREPLACE here
		}
		return err
	})
}

// renameWith opens the parents of from and to (both relative) beneath the
// tree and renames between them with do.
func (t *txTree) renameWith(from, to string, do func(ffd int, fname string, tfd int, tname string) error) error {
	ffd, fname, err := t.parent(from)
	if err != nil {
		return err
	}
	defer unix.Close(ffd)
	tfd, tname, err := t.parent(to)
	if err != nil {
		return err
	}
	defer unix.Close(tfd)
	if err := do(ffd, fname, tfd, tname); err != nil {
		return &os.LinkError{Op: "rename", Old: t.abs(from), New: t.abs(to), Err: err}
	}
	return nil
}

// renameChecked renames after checking the destination does not exist: the
// racy form of RENAME_NOREPLACE, for filesystems without it.
func renameChecked(ffd int, fname string, tfd int, tname string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(tfd, tname, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		return unix.EEXIST
	}
	return unix.Renameat(ffd, fname, tfd, tname)
}

// chmod sets the permission bits of directory rel.
func (t *txTree) chmod(rel string, mode fs.FileMode) error {
	fd, err := t.openBeneath(rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Fchmod(fd, unixPerm(mode)); err != nil {
		return &os.PathError{Op: "chmod", Path: t.abs(rel), Err: err}
	}
	return nil
}

// mkdir creates directory rel, owner-only.
func (t *txTree) mkdir(rel string) error {
	pfd, name, err := t.parent(rel)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := unix.Mkdirat(pfd, name, 0o700); err != nil {
		return &os.PathError{Op: "mkdir", Path: t.abs(rel), Err: err}
	}
	return nil
}

// isEmptyDir reports whether directory rel has no entries.
func (t *txTree) isEmptyDir(rel string) (bool, error) {
	fd, err := t.openBeneath(rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return false, err
	}
	f := os.NewFile(uintptr(fd), t.abs(rel))
	defer f.Close()
	_, err = f.Readdirnames(1)
	if err == io.EOF {
		return true, nil
	}
	return false, err
}

// sync flushes the tree's filesystem (syncfs), which covers every
// directory an apply touched, so dirs is not needed here.
func (t *txTree) sync(_ []string) error {
	if err := unix.Syncfs(t.fd); err != nil {
		return &os.PathError{Op: "syncfs", Path: t.root, Err: err}
	}
	return nil
}

// syncStaged does nothing: one syncfs after staging flushes every file.
func syncStaged(*os.File) error { return nil }

// statDir returns what undoing the removal of directory rel restores.
func (t *txTree) statDir(rel string) (dirMeta, error) {
	pfd, name, err := t.parent(rel)
	if err != nil {
		return dirMeta{}, err
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return dirMeta{}, &os.PathError{Op: "fstatat", Path: t.abs(rel), Err: err}
	}
	return dirMeta{Mode: modeOfStat(st.Mode) & permMask, Uid: int(st.Uid), Gid: int(st.Gid),
		MtimeNanos: st.Mtim.Nano()}, nil
}

// rmdir removes the empty directory rel.
func (t *txTree) rmdir(rel string) error {
	pfd, name, err := t.parent(rel)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := unix.Unlinkat(pfd, name, unix.AT_REMOVEDIR); err != nil {
		return &os.PathError{Op: "rmdir", Path: t.abs(rel), Err: err}
	}
	return nil
}

// restoreDir makes directory rel again with the metadata m: owner (when
// root), mode and modification time.
func (t *txTree) restoreDir(rel string, m dirMeta) error {
	if err := t.mkdir(rel); err != nil {
		return err
	}
	fd, err := t.openBeneath(rel, unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if os.Geteuid() == 0 {
		if err := unix.Fchown(fd, m.Uid, m.Gid); err != nil {
			return &os.PathError{Op: "chown", Path: t.abs(rel), Err: err}
		}
	}
	if err := unix.Fchmod(fd, unixPerm(m.Mode)); err != nil {
		return &os.PathError{Op: "chmod", Path: t.abs(rel), Err: err}
	}
	if err := unix.Futimes(fd, []unix.Timeval{unix.NsecToTimeval(m.MtimeNanos), unix.NsecToTimeval(m.MtimeNanos)}); err != nil {
		return &os.PathError{Op: "utimensat", Path: t.abs(rel), Err: err}
	}
	return nil
}

// movesCopy reports whether moving a file within the tree costs a copy of
// it: on an overlay view, a file of a lower layer is copied up (and synced)
// before it can be renamed.
func (t *txTree) movesCopy() bool {
	var st unix.Statfs_t
	return unix.Fstatfs(t.fd, &st) == nil && st.Type == plan.OverlayMagic
}

// openFile opens rel, a file or symlink, for reading without following it
// (a symlink is opened as itself, O_PATH, for its metadata).
func (t *txTree) openFile(rel string) (*os.File, error) {
	fd, err := t.openBeneath(rel, unix.O_RDONLY|unix.O_NOFOLLOW)
	if errors.Is(err, unix.ELOOP) {
		fd, err = t.openBeneath(rel, unix.O_PATH|unix.O_NOFOLLOW)
	}
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), t.abs(rel)), nil
}

// renameOver moves from to to (both relative), replacing a file or symlink
// at to.
func (t *txTree) renameOver(from, to string) error {
	return t.renameWith(from, to, unix.Renameat)
}

// unlink removes the file or symlink rel.
func (t *txTree) unlink(rel string) error {
	pfd, name, err := t.parent(rel)
	if err != nil {
		return err
	}
	defer unix.Close(pfd)
	if err := unix.Unlinkat(pfd, name, 0); err != nil {
		return &os.PathError{Op: "unlink", Path: t.abs(rel), Err: err}
	}
	return nil
}

// linkID returns the device and inode of the regular file p when it has
// more than one link.
func linkID(p string) ([2]uint64, bool) {
	fi, err := fstree.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return [2]uint64{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || st.Nlink < 2 {
		return [2]uint64{}, false
	}
	return [2]uint64{uint64(st.Dev), st.Ino}, true
}

// lowerDirs returns the lower layers of the overlay mounted at the tree's
// root, top first, as /proc/self/mountinfo lists them; nil when the root
// is not an overlay's mount point or the list cannot be read.
func (t *txTree) lowerDirs() []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	return overlayLowers(string(b), t.root)
}

// overlayLowers returns the lower layers, top first, of the overlay that
// mountinfo (as /proc/self/mountinfo reads) shows last at mount point root.
func overlayLowers(mountinfo, root string) []string {
	var out []string
	for _, line := range strings.Split(mountinfo, "\n") {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 || unescapeMountinfo(f[4]) != root {
			continue
		}
		if g[0] != "overlay" {
			out = nil // mounted over the overlay
			continue
		}
		out = nil // the last mount on the root is the one seen
		for _, opt := range splitEscaped(g[2], ',') {
			switch k, v, _ := strings.Cut(opt, "="); k {
			case "lowerdir":
				for _, l := range splitEscaped(v, ':') {
					out = append(out, unescapeOverlay(unescapeMountinfo(l)))
				}
			case "lowerdir+":
				out = append(out, unescapeOverlay(unescapeMountinfo(v)))
			}
		}
	}
	return out
}

// splitEscaped splits s at every sep not escaped by a backslash.
func splitEscaped(s string, sep byte) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case sep:
			out, start = append(out, s[start:i]), i+1
		}
	}
	return append(out, s[start:])
}

// unescapeOverlay undoes overlay's escapes of its option separators (a
// backslash before ':', ',' or itself).
func unescapeOverlay(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte(`\:,`, s[i+1]) >= 0 {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unescapeMountinfo undoes the octal escapes (\040 for a space) of a path
// in /proc/self/mountinfo.
func unescapeMountinfo(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
