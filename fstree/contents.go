package fstree

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// errNoHoles is what nextData returns where the filesystem or platform
// cannot say where a file's holes are: the rest of the file is then copied
// as data.
var errNoHoles = errors.New("fstree: SEEK_DATA not supported")

// bufSize is the buffer of a byte copy, where copy_file_range cannot be used.
const bufSize = 1 << 20

// CopyContents copies the bytes of src into dst, a new empty file, and keeps
// src's holes: only src's data extents are copied (found with SEEK_DATA and
// SEEK_HOLE, each moved with copy_file_range where the kernel has it and a
// buffered read and write otherwise) and dst is then truncated to src's
// size, so a trailing hole stays a hole. Where holes cannot be found (a
// filesystem without SEEK_DATA, a platform other than Linux) every byte is
// copied. Both files are read and written at explicit offsets; their file
// offsets are left where they were. src must be a regular file. dst
// ends up the size src had when the copy started, or less if src shrank
// meanwhile.
func CopyContents(dst, src *os.File) error {
	if err := copyContents(dst, src); err != nil {
		return fmt.Errorf("fstree: copy %s to %s: %w", src.Name(), dst.Name(), err)
	}
	return nil
}

// copyContents is CopyContents without the error prefix.
func copyContents(dst, src *os.File) error {
	fi, err := src.Stat()
	if err != nil {
		return err
	}
	switch {
	case fi.IsDir():
		return &os.PathError{Op: "copy contents", Path: src.Name(), Err: syscall.EISDIR}
	case !fi.Mode().IsRegular():
		return &os.PathError{Op: "copy contents", Path: src.Name(), Err: fmt.Errorf("not a regular file (%v)", fi.Mode().Type())}
	}
	// Finding holes moves src's offset: put it back after.
	if pos, err := src.Seek(0, io.SeekCurrent); err == nil {
		defer src.Seek(pos, io.SeekStart)
	}
	x := &extentCopier{dst: dst, src: src}
	size := fi.Size()
	for off := int64(0); off < size; {
		data, hole, err := nextData(src, off, size)
		if errors.Is(err, io.EOF) {
			break // the rest is a hole
		}
		if errors.Is(err, errNoHoles) {
			data, hole, err = off, size, nil
		}
		if err != nil {
			return err
		}
		n, err := x.copyRange(data, hole-data)
		if err != nil {
			return err
		}
		if n < hole-data {
			size = data + n // src shrank under us: stop at its end
			break
		}
		off = hole
	}
	if err := dst.Truncate(size); err != nil {
		return err
	}
	return nil
}

// extentCopier copies ranges of src to the same offsets of dst.
type extentCopier struct {
	dst, src *os.File
	noCFR    bool   // copy_file_range failed once: use bytes from now on
	buf      []byte // for byte copies, made on first use
}

// copyRange copies n bytes at off, or fewer if src ends first, and returns
// how many it copied.
func (x *extentCopier) copyRange(off, n int64) (int64, error) {
	var done int64
	if !x.noCFR {
		var err error
		done, err = copyFileRange(x.dst, x.src, off, n)
		if err == nil || !errors.Is(err, errors.ErrUnsupported) {
			return done, err
		}
		x.noCFR = true
	}
	m, err := x.byteCopy(off+done, n-done)
	return done + m, err
}

// byteCopy copies n bytes at off through a buffer, or fewer if src ends
// first.
func (x *extentCopier) byteCopy(off, n int64) (int64, error) {
	if x.buf == nil {
		x.buf = make([]byte, bufSize)
	}
	var done int64
	for done < n {
		b := x.buf[:min(int64(len(x.buf)), n-done)]
		r, err := x.src.ReadAt(b, off+done)
		if r > 0 {
			if _, werr := x.dst.WriteAt(b[:r], off+done); werr != nil {
				return done, werr
			}
			done += int64(r)
		}
		if errors.Is(err, io.EOF) {
			return done, nil
		}
		if err != nil {
			return done, err
		}
	}
	return done, nil
}
