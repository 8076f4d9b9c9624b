//go:build linux

package layertest

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// sparseFile is a model of a sparse file: its apparent size and the data
// written into it; every other byte is a hole.
type sparseFile struct {
	size   int64
	writes []sparseWrite
}

// sparseWrite is data written at off.
type sparseWrite struct {
	off  int64
	data []byte
}

const gib = int64(1) << 30

// sparseSlack is how many 512-byte blocks a copy may hold beyond the data
// written into it, per write: overlay's copy-up (done by the kernel, not
// tine) copies in chunks of 1 MiB and skips only whole-chunk holes.
const sparseSlack = 2048 + 64

// testSparseFile: a 4 GiB file holding 24 KiB of data (at 0 and at 1 GiB,
// a trailing hole) stays that small, with the same bytes and size, through
// import, activate, seal and fork; so does a sparse write in a fork.
func testSparseFile(h *harness) {
	img := sparseFile{size: 4 * gib, writes: []sparseWrite{{0, randBytes(1, 8<<10)}, {gib, randBytes(2, 16<<10)}}}
	src := h.source(tree{"small": file("s")})
	if !h.writeSparse(filepath.Join(src, "disk.img"), img) {
		h.t.Skipf("the test directory's filesystem does not keep holes")
	}
	v0 := h.importDir(src, false)
	r := h.activate(v0)
	h.checkSparse("source view", filepath.Join(r.View, "disk.img"), img)
	fork, v1 := h.fork(r, v0)
	h.checkSparse("fork", filepath.Join(fork.View, "disk.img"), img)
	h.checkSparse("sealed version", h.readFile(v1, "disk.img"), img)
	grown := img
	grown.writes = append(append([]sparseWrite{}, img.writes...), sparseWrite{3 * gib, randBytes(3, 4<<10)})
	h.writeAt(filepath.Join(fork.View, "disk.img"), grown.writes[2])
	h.checkSparse("fork after a write at 3 GiB", filepath.Join(fork.View, "disk.img"), grown)
	v2 := h.seal(fork, v1)
	h.checkSparse("fork's sealed version", h.readFile(v2, "disk.img"), grown)
	h.checkSparse("source after the fork's write", filepath.Join(r.View, "disk.img"), img)
}

// randBytes returns n bytes from a seeded generator.
func randBytes(seed byte, n int) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{seed}).Read(b)
	return b
}

// writeSparse creates p as img describes and reports whether the
// filesystem kept it sparse.
func (h *harness) writeSparse(p string, img sparseFile) bool {
	h.t.Helper()
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		h.t.Fatal(err)
	}
	for _, w := range img.writes {
		h.writeAt(p, w)
	}
	if err := os.Truncate(p, img.size); err != nil {
		h.t.Fatal(err)
	}
	return h.blocks(p)*512 < img.size/2
}

// writeAt writes w into the existing file p.
func (h *harness) writeAt(p string, w sparseWrite) {
	h.t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err == nil {
		_, err = f.WriteAt(w.data, w.off)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		h.t.Fatal(err)
	}
}

// readFile makes version readable and returns the path of name in it; the
// harness releases it at the end of the case.
func (h *harness) readFile(version []string, name string) string {
	h.t.Helper()
	dir, _ := h.read(version)
	return filepath.Join(dir, name)
}

// blocks returns st_blocks of p.
func (h *harness) blocks(p string) int64 {
	h.t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		h.t.Fatal(err)
	}
	return st.Blocks
}

// checkSparse fails the case unless p is img: its size, its bytes (read
// over img's writes and over every data extent p reports; the rest are
// holes, zeros), and no more blocks than img's data needs.
func (h *harness) checkSparse(what, p string, img sparseFile) {
	h.t.Helper()
	f, err := os.Open(p)
	if err != nil {
		h.t.Fatalf("%s: %v", what, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		h.t.Fatal(err)
	}
	if fi.Size() != img.size {
		h.t.Errorf("%s: %s is %d bytes, want %d", what, p, fi.Size(), img.size)
	}
	var data int64
	for _, w := range img.writes {
		data += int64(len(w.data))
	}
	if b := h.blocks(p); b > data/512+sparseSlack*int64(len(img.writes)) {
		h.t.Errorf("%s: %s takes %d blocks of 512 bytes (%d MiB) for %d bytes of data: its holes were filled",
			what, p, b, b>>11, data)
	}
	regions := dataRegions(h, f, fi.Size())
	for _, w := range img.writes {
		regions = append(regions, [2]int64{w.off, int64(len(w.data))})
	}
	for _, r := range regions {
		got := make([]byte, r[1])
		n, err := f.ReadAt(got, r[0])
		if err != nil && !errors.Is(err, io.EOF) {
			h.t.Fatal(err)
		}
		if want := img.bytes(r[0], int64(n)); !bytes.Equal(got[:n], want) {
			h.t.Errorf("%s: %s: bytes at [%d, %d) differ", what, p, r[0], r[0]+int64(n))
		}
	}
}

// bytes returns what img holds at [off, off+n).
func (img sparseFile) bytes(off, n int64) []byte {
	b := make([]byte, n)
	for _, w := range img.writes {
		lo, hi := max(off, w.off), min(off+n, w.off+int64(len(w.data)))
		if lo < hi {
			copy(b[lo-off:hi-off], w.data[lo-w.off:hi-w.off])
		}
	}
	return b
}

// dataRegions lists f's data extents as offset and length, by SEEK_DATA
// and SEEK_HOLE; regions over 64 MiB would mean filled holes, which the
// block count reports, and are cut short.
func dataRegions(h *harness, f *os.File, size int64) [][2]int64 {
	var out [][2]int64
	for off := int64(0); off < size; {
		d, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break
		}
		if err != nil {
			h.t.Logf("SEEK_DATA: %v; bytes checked at the writes only", err)
			return nil
		}
		hole, err := unix.Seek(int(f.Fd()), d, unix.SEEK_HOLE)
		if err != nil {
			h.t.Fatal(err)
		}
		out = append(out, [2]int64{d, min(hole-d, 64<<20)})
		off = hole
	}
	return out
}
