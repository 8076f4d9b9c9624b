package fstree_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/tinehq/tine/fstree"
	"golang.org/x/sys/unix"
)

const (
	gib = int64(1) << 30
	// sparseSize is the apparent size of the test's sparse file.
	sparseSize = 4 * gib
	// blockSlack is how many 512-byte blocks a copy may hold beyond its
	// source's: a few filesystem blocks of rounding and metadata.
	blockSlack = 256
)

// extent is a region of a file: where it starts and how long it is.
type extent struct{ off, n int64 }

// sparseLayout is the test file: data at 0 and at 1 GiB, holes between and
// after, to 4 GiB.
var sparseLayout = []extent{{0, 8 << 10}, {gib, 12 << 10}}

// makeSparse creates path with random data at each extent of layout and
// apparent size size, and skips t when the filesystem stores the holes
// (it has no sparse files to keep).
func makeSparse(t testing.TB, path string, layout []extent, size int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
	must(t, err)
	defer f.Close()
	rng := rand.NewChaCha8([32]byte{7})
	for _, e := range layout {
		b := make([]byte, e.n)
		rng.Read(b)
		_, err := f.WriteAt(b, e.off)
		must(t, err)
	}
	must(t, f.Truncate(size))
	if blocks(t, path)*512 > size/2 {
		t.Skipf("%s does not keep holes (%d blocks for %d bytes)", filepath.Dir(path), blocks(t, path), size)
	}
}

// blocks returns the 512-byte blocks path occupies (st_blocks).
func blocks(t testing.TB, path string) int64 {
	t.Helper()
	var st unix.Stat_t
	must(t, unix.Lstat(path, &st))
	return st.Blocks
}

// dataExtents lists path's data extents with SEEK_DATA and SEEK_HOLE.
func dataExtents(t testing.TB, path string) []extent {
	t.Helper()
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	fi, err := f.Stat()
	must(t, err)
	var out []extent
	for off := int64(0); off < fi.Size(); {
		data, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break
		}
		must(t, err)
		hole, err := unix.Seek(int(f.Fd()), data, unix.SEEK_HOLE)
		must(t, err)
		out = append(out, extent{data, hole - data})
		off = hole
	}
	return out
}

// checkSparseCopy fails t unless dst has src's size and bytes and takes
// about as many blocks as src. Bytes are compared over the data extents of
// both files; everywhere else both are holes, which read as zeros.
func checkSparseCopy(t testing.TB, src, dst string) {
	t.Helper()
	sfi, err := os.Stat(src)
	must(t, err)
	dfi, err := os.Stat(dst)
	must(t, err)
	if sfi.Size() != dfi.Size() {
		t.Errorf("%s: size %d, want %d", dst, dfi.Size(), sfi.Size())
	}
	if sb, db := blocks(t, src), blocks(t, dst); db > sb+blockSlack {
		t.Errorf("%s: %d blocks of 512 bytes (%d MiB), source %d: holes were filled", dst, db, db>>11, sb)
	}
	sf, err := os.Open(src)
	must(t, err)
	defer sf.Close()
	df, err := os.Open(dst)
	must(t, err)
	defer df.Close()
	for _, e := range append(dataExtents(t, src), dataExtents(t, dst)...) {
		a, b := readAt(t, sf, e), readAt(t, df, e)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: bytes at [%d, %d) differ from the source's", dst, e.off, e.off+e.n)
		}
	}
}

// readAt reads extent e of f, up to end of file.
func readAt(t testing.TB, f *os.File, e extent) []byte {
	t.Helper()
	b := make([]byte, e.n)
	n, err := f.ReadAt(b, e.off)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return b[:n]
}

func TestCopy_Sparse(t *testing.T) {
	dirs := map[string]func(t *testing.T) string{"tempdir": func(t *testing.T) string { return t.TempDir() }}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		dirs["tmpfs"] = func(t *testing.T) string {
			d, err := os.MkdirTemp("/dev/shm", "tine-sparse-")
			must(t, err)
			t.Cleanup(func() { os.RemoveAll(d) })
			return d
		}
	}
	for name, dir := range dirs {
		t.Run(name, func(t *testing.T) {
			src, dst := dir(t), t.TempDir()
			makeSparse(t, filepath.Join(src, "disk.img"), sparseLayout, sparseSize)
			write(t, filepath.Join(src, "dense"), "plain bytes", 0o644)
			must(t, fstree.Copy(context.Background(), src, dst, fstree.CopyOptions{}))
			checkSparseCopy(t, filepath.Join(src, "disk.img"), filepath.Join(dst, "disk.img"))
			checkSameTree(t, filepath.Join(src, "dense"), filepath.Join(dst, "dense"))
		})
	}
}

func TestCopy_SparseReflinkFallback(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	makeSparse(t, filepath.Join(src, "disk.img"), sparseLayout, sparseSize)
	must(t, fstree.Copy(context.Background(), src, dst, fstree.CopyOptions{Reflink: true}))
	checkSparseCopy(t, filepath.Join(src, "disk.img"), filepath.Join(dst, "disk.img"))
}

func TestCopyContents(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name   string
		layout []extent
		size   int64
	}{
		{"DataAt0And1GiBTrailingHole", sparseLayout, sparseSize},
		{"LeadingHole", []extent{{64 * mib, 4096}}, 128 * mib},
		{"DataToTheEnd", []extent{{0, 4096}, {8 * mib, mib}}, 9 * mib},
		{"OnlyHole", nil, gib},
		{"Empty", nil, 0},
		{"Dense", []extent{{0, 3*mib + 17}}, 3*mib + 17},
		{"UnalignedEnd", []extent{{0, 100}, {5*mib + 3, 10}}, 5*mib + 13},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
			f, err := os.OpenFile(src, os.O_RDWR|os.O_CREATE, 0o600)
			must(t, err)
			f.Close()
			if tc.size > 0 {
				os.Remove(src)
				makeSparseAnyway(t, src, tc.layout, tc.size)
			}
			copyContents(t, src, dst)
			checkSparseCopy(t, src, dst)
		})
	}
}

// makeSparseAnyway is makeSparse for layouts that may be dense.
func makeSparseAnyway(t *testing.T, path string, layout []extent, size int64) {
	t.Helper()
	var sum int64
	for _, e := range layout {
		sum += e.n
	}
	if sum*2 > size {
		f, err := os.Create(path)
		must(t, err)
		rng := rand.NewChaCha8([32]byte{9})
		b := make([]byte, size)
		rng.Read(b)
		_, err = f.Write(b)
		must(t, errors.Join(err, f.Close()))
		return
	}
	makeSparse(t, path, layout, size)
}

// copyContents runs fstree.CopyContents from src to the new file dst.
func copyContents(t testing.TB, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	must(t, err)
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	must(t, err)
	must(t, fstree.CopyContents(out, in))
	must(t, out.Close())
}

// TestCopyContents_AcrossFilesystems copies from tmpfs to the temp dir,
// where copy_file_range refuses (EXDEV) and bytes go through a buffer.
func TestCopyContents_AcrossFilesystems(t *testing.T) {
	shm, err := os.MkdirTemp("/dev/shm", "tine-sparse-")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(shm) })
	var a, b unix.Statfs_t
	must(t, unix.Statfs(shm, &a))
	dir := t.TempDir()
	must(t, unix.Statfs(dir, &b))
	if a.Type == b.Type {
		t.Skip("the temp dir is on tmpfs too")
	}
	src := filepath.Join(shm, "src")
	makeSparse(t, src, sparseLayout, sparseSize)
	copyContents(t, src, filepath.Join(dir, "dst"))
	checkSparseCopy(t, src, filepath.Join(dir, "dst"))
}

// TestCopyContents_OffsetsUntouched: CopyContents reads and writes at
// explicit offsets, so the callers' file offsets do not move.
func TestCopyContents_OffsetsUntouched(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	write(t, src, "0123456789", 0o644)
	in, err := os.Open(src)
	must(t, err)
	defer in.Close()
	_, err = in.Seek(3, io.SeekStart)
	must(t, err)
	out, err := os.Create(filepath.Join(dir, "dst"))
	must(t, err)
	defer out.Close()
	must(t, fstree.CopyContents(out, in))
	for _, f := range []*os.File{in, out} {
		if off, _ := f.Seek(0, io.SeekCurrent); f == in && off != 3 || f == out && off != 0 {
			t.Errorf("%s: offset %d after CopyContents", f.Name(), off)
		}
	}
	got, err := os.ReadFile(filepath.Join(dir, "dst"))
	must(t, err)
	if string(got) != "0123456789" {
		t.Errorf("copy = %q", got)
	}
}

// TestCopyContents_NotRegular: a directory is refused with an error, not
// copied as nothing.
func TestCopyContents_NotRegular(t *testing.T) {
	dir := t.TempDir()
	in, err := os.Open(dir)
	must(t, err)
	defer in.Close()
	out, err := os.Create(filepath.Join(t.TempDir(), "dst"))
	must(t, err)
	defer out.Close()
	if err := fstree.CopyContents(out, in); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("CopyContents from a directory: %v, want EISDIR", err)
	}
}

// benchSparse makes a 1 GiB file holding 16 extents of 64 KiB (1 MiB of
// data) and times copying it into a fresh file with copy, per iteration.
func benchSparse(b *testing.B, copy func(dst, src *os.File) error) {
	dir := b.TempDir()
	src := filepath.Join(dir, "src")
	var layout []extent
	for i := range int64(16) {
		layout = append(layout, extent{i * (gib / 16), 64 << 10})
	}
	makeSparse(b, src, layout, gib)
	in, err := os.Open(src)
	must(b, err)
	defer in.Close()
	b.SetBytes(gib)
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		dst := filepath.Join(dir, "dst"+strconv.Itoa(i))
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		must(b, err)
		_, err = in.Seek(0, io.SeekStart)
		must(b, err)
		b.StartTimer()
		must(b, copy(out, in))
		b.StopTimer()
		must(b, out.Close())
		b.ReportMetric(float64(blocks(b, dst)*512)/(1<<20), "MiB-on-disk")
		must(b, os.Remove(dst))
		b.StartTimer()
	}
}

// BenchmarkCopySparse1GiB copies a 1 GiB file with 1 MiB of data with
// fstree.CopyContents, which copies the data extents only.
func BenchmarkCopySparse1GiB(b *testing.B) { benchSparse(b, fstree.CopyContents) }

// BenchmarkCopySparse1GiBDense is the baseline: the same file copied with
// io.Copy (copy_file_range over the whole file, holes written as zeros), as
// fstree did before.
func BenchmarkCopySparse1GiBDense(b *testing.B) {
	benchSparse(b, func(dst, src *os.File) error { _, err := io.Copy(dst, src); return err })
}
