package fstree

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// compareChunk is how many bytes sameContent reads from each file at a time.
const compareChunk = 64 << 10

// SamePath reports whether a and b have the same signature: type, permission
// bits, and content (regular files) or target (symlinks) or device number.
// Directories compare by type and mode only. Owners, times and extended
// attributes are not compared.
func SamePath(a, b string) (bool, error) {
	fa, err := Lstat(a)
	if err != nil {
		return false, fmt.Errorf("fstree: compare: %w", err)
	}
	fb, err := Lstat(b)
	if err != nil {
		return false, fmt.Errorf("fstree: compare: %w", err)
	}
	same, err := sameEntry(a, b, fa, fb, false)
	if err != nil {
		return false, fmt.Errorf("fstree: compare %s and %s: %w", a, b, err)
	}
	return same, nil
}

// sameEntry compares a and b (described by fa and fb) as SamePath does. With
// quick, regular files of equal size and modification time count as equal
// without reading them (the stat-cache shortcut git uses).
func sameEntry(a, b string, fa, fb fs.FileInfo, quick bool) (bool, error) {
	if fa.Mode().Type() != fb.Mode().Type() || permBits(fa) != permBits(fb) {
		return false, nil
	}
	switch t := fa.Mode().Type(); {
	case t == 0:
		if fa.Size() != fb.Size() {
			return false, nil
		}
		if quick && fa.ModTime().Equal(fb.ModTime()) {
			return true, nil
		}
		return sameContent(a, b)
	case t == fs.ModeSymlink:
		return sameTarget(a, b)
	case t == fs.ModeDir:
		return true, nil
	default:
		return statOf(fa).rdev == statOf(fb).rdev, nil
	}
}

// sameTarget reports whether symlinks a and b point at the same text.
func sameTarget(a, b string) (bool, error) {
	ta, err := Readlink(a)
	if err != nil {
		return false, err
	}
	tb, err := Readlink(b)
	if err != nil {
		return false, err
	}
	return ta == tb, nil
}

// sameContent reports whether files a and b hold the same bytes. Neither
// is followed if it became a symlink since it was looked at.
func sameContent(a, b string) (bool, error) {
	fa, err := OpenFile(a, os.O_RDONLY|openFileFlags, 0)
	if err != nil {
		return false, err
	}
	defer fa.Close()
	fb, err := OpenFile(b, os.O_RDONLY|openFileFlags, 0)
	if err != nil {
		return false, err
	}
	defer fb.Close()
	return sameStream(fa, fb)
}

// sameStream reports whether ra and rb yield the same bytes.
func sameStream(ra, rb io.Reader) (bool, error) {
	ba, bb := make([]byte, compareChunk), make([]byte, compareChunk)
	for {
		na, errA := io.ReadFull(ra, ba)
		nb, errB := io.ReadFull(rb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		endA, endB := isEOF(errA), isEOF(errB)
		switch {
		case errA != nil && !endA:
			return false, errA
		case errB != nil && !endB:
			return false, errB
		case endA || endB:
			return endA == endB, nil
		}
	}
}

// isEOF reports whether err from io.ReadFull means the stream ended.
func isEOF(err error) bool {
	return err == io.EOF || err == io.ErrUnexpectedEOF
}
