//go:build !linux

package merge

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// oNoFollow is not portable; callers Lstat before they open.
const oNoFollow = 0

// txTree is the target directory of an apply, held open as an os.Root so no
// path escapes it; every parent is also checked with Lstat and a symlink
// refused, so no symlink inside it is followed either.
type txTree struct {
	root string
	r    *os.Root
}

// openTxTree opens directory root.
func openTxTree(root string) (*txTree, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	return &txTree{root: root, r: r}, nil
}

// close releases the tree.
func (t *txTree) close() error { return t.r.Close() }

// abs returns the filesystem path of rel.
func (t *txTree) abs(rel string) string { return filepath.Join(t.root, filepath.FromSlash(rel)) }

// checkParents returns fs.ErrNotExist when a parent of rel is missing or
// not a directory, and an error when one is a symlink.
func (t *txTree) checkParents(rel string) error {
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		p := path.Join(parts[:i]...)
		fi, err := t.r.Lstat(p)
		switch {
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			return &os.PathError{Op: "resolve", Path: t.abs(p), Err: errors.New("parent is a symlink")}
		case !fi.IsDir():
			return &os.PathError{Op: "resolve", Path: t.abs(p), Err: fs.ErrNotExist}
		}
	}
	return nil
}

// lstat returns the type and permission bits of rel, and whether it exists.
// A parent that is not a directory (a symlink included) means rel does not
// exist in the tree.
func (t *txTree) lstat(rel string) (fs.FileMode, bool, error) {
	err := t.checkParents(rel)
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Op == "resolve" {
		return 0, false, nil
	}
	if err == nil {
		var fi fs.FileInfo
		if fi, err = t.r.Lstat(rel); err == nil {
			return fi.Mode(), true, nil
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	return 0, false, err
}

// rename moves from to to without replacing anything (checked, racy).
func (t *txTree) rename(from, to string) error {
	if err := t.checkParents(from); err != nil {
		return err
	}
	if err := t.checkParents(to); err != nil {
		return err
	}
	if _, err := t.r.Lstat(to); err == nil {
		return &os.LinkError{Op: "rename", Old: t.abs(from), New: t.abs(to), Err: fs.ErrExist}
	}
	return t.r.Rename(from, to)
}

// chmod sets the permission bits of directory rel.
func (t *txTree) chmod(rel string, mode fs.FileMode) error {
	m, ok, err := t.lstat(rel)
	if err != nil || !ok || !m.IsDir() {
		return fmt.Errorf("chmod %s: not a directory: %w", t.abs(rel), errors.Join(err, fs.ErrInvalid))
	}
	return t.r.Chmod(rel, mode)
}

// mkdir creates directory rel, owner-only.
func (t *txTree) mkdir(rel string) error {
	if err := t.checkParents(rel); err != nil {
		return err
	}
	return t.r.Mkdir(rel, 0o700)
}

// isEmptyDir reports whether directory rel has no entries.
func (t *txTree) isEmptyDir(rel string) (bool, error) {
	if err := t.checkParents(rel); err != nil {
		return false, err
	}
	f, err := t.r.Open(rel)
	if err != nil {
		return false, err
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	if err == io.EOF {
		return true, nil
	}
	return false, err
}

// sync flushes the entries of the root and of dirs to stable storage.
func (t *txTree) sync(dirs []string) error {
	for _, d := range append([]string{"."}, dirs...) {
		if _, ok, err := t.lstat(d); err != nil || !ok {
			continue
		}
		f, err := t.r.Open(d)
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return fmt.Errorf("sync %s: %w", t.abs(d), err)
		}
	}
	return nil
}

// syncStaged flushes a staged file.
func syncStaged(f *os.File) error { return f.Sync() }

// statDir returns what undoing the removal of directory rel restores.
func (t *txTree) statDir(rel string) (dirMeta, error) {
	if err := t.checkParents(rel); err != nil {
		return dirMeta{}, err
	}
	fi, err := t.r.Lstat(rel)
	if err != nil {
		return dirMeta{}, err
	}
	return dirMeta{Mode: fi.Mode() & permMask, MtimeNanos: fi.ModTime().UnixNano()}, nil
}

// rmdir removes the empty directory rel.
func (t *txTree) rmdir(rel string) error {
	if err := t.checkParents(rel); err != nil {
		return err
	}
	return t.r.Remove(rel)
}

// restoreDir makes directory rel again with the mode and modification time
// of m.
func (t *txTree) restoreDir(rel string, m dirMeta) error {
	if err := t.mkdir(rel); err != nil {
		return err
	}
	if err := t.r.Chmod(rel, m.Mode); err != nil {
		return err
	}
	mt := time.Unix(0, m.MtimeNanos)
	return t.r.Chtimes(rel, mt, mt)
}

// movesCopy reports false: moving a file here is a rename.
func (t *txTree) movesCopy() bool { return false }

// openFile opens rel for reading.
func (t *txTree) openFile(rel string) (*os.File, error) {
	if err := t.checkParents(rel); err != nil {
		return nil, err
	}
	return t.r.Open(rel)
}

// renameOver moves from to to, replacing a file or symlink at to.
func (t *txTree) renameOver(from, to string) error {
	if err := t.checkParents(from); err != nil {
		return err
	}
	if err := t.checkParents(to); err != nil {
		return err
	}
	return t.r.Rename(from, to)
}

// unlink removes the file or symlink rel.
func (t *txTree) unlink(rel string) error {
	if err := t.checkParents(rel); err != nil {
		return err
	}
	return t.r.Remove(rel)
}

// linkID reports no hard links: they are kept on Linux only.
func linkID(string) ([2]uint64, bool) { return [2]uint64{}, false }

// lowerDirs returns nil: there are no overlay views here.
func (t *txTree) lowerDirs() []string { return nil }
