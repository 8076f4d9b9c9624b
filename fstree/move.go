package fstree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// MoveContents renames every entry of src into dst (same filesystem), leaving
// src empty. It fails with an error wrapping syscall.EXDEV across filesystems,
// checked before anything moves. An entry that already exists in dst is an
// error, not overwritten. An immutable or append-only entry (chattr +i, +a)
// cannot be renamed: the error wraps ErrPinned and names it. If a rename fails half-way, the entries already
// moved are moved back.
func MoveContents(src, dst string) error {
	if err := sameDevice(src, dst); err != nil {
		return fmt.Errorf("fstree: move %s to %s: %w", src, dst, err)
	}
	names, err := readNames(src)
	if err != nil {
		return fmt.Errorf("fstree: move: %w", err)
	}
	for i, name := range names {
		if err := moveEntry(filepath.Join(src, name), filepath.Join(dst, name)); err != nil {
			back := moveBack(src, dst, names[:i])
			return fmt.Errorf("fstree: move %s to %s: %w", src, dst, errors.Join(err, back))
		}
	}
	return nil
}

// sameDevice returns an error wrapping syscall.EXDEV unless directories a
// and b are on the same filesystem.
func sameDevice(a, b string) error {
	fa, err := os.Stat(a)
	if err != nil {
		return err
	}
	fb, err := os.Stat(b)
	if err != nil {
		return err
	}
	if statOf(fa).dev != statOf(fb).dev {
		return &os.LinkError{Op: "rename", Old: a, New: b, Err: syscall.EXDEV}
	}
	return nil
}

// moveBack renames names from dst back into src, after a failed move.
func moveBack(src, dst string, names []string) error {
	var errs []error
	for i := len(names) - 1; i >= 0; i-- {
		err := moveEntry(filepath.Join(dst, names[i]), filepath.Join(src, names[i]))
		if err != nil {
			errs = append(errs, fmt.Errorf("move back: %w", err))
		}
	}
	return errors.Join(errs...)
}

// moveEntry renames oldpath to newpath, which must not exist. Renaming a
// directory to another parent rewrites its ".." entry, which needs write
// permission on the directory itself; a read-only directory is made writable
// for the rename and given its mode back after.
func moveEntry(oldpath, newpath string) error {
	err := renameNoReplace(oldpath, newpath)
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	if pinned(oldpath) {
		return fmt.Errorf("%s is %w; tine cannot move it (clear the flag with chattr -i -a): %w", oldpath, ErrPinned, err)
	}
	fi, serr := Lstat(oldpath)
	if serr != nil || !fi.IsDir() || fi.Mode()&0o200 != 0 {
		return err
	}
	if Chmod(oldpath, fi.Mode()|0o200) != nil {
		return err
	}
	if err := renameNoReplace(oldpath, newpath); err != nil {
		_ = Chmod(oldpath, fi.Mode())
		return err
	}
	return Chmod(newpath, fi.Mode())
}

// renameChecked renames oldpath to newpath after checking newpath does not
// exist: the portable, racy form of RENAME_NOREPLACE.
func renameChecked(oldpath, newpath string) error {
	if _, err := Lstat(newpath); err == nil {
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: fs.ErrExist}
	}
	return Rename(oldpath, newpath)
}
