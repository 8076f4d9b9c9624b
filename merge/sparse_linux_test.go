package merge

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestApply_SparseStaysSparse: a merged file of 4 GiB apparent size with a
// few KiB of data lands with its holes, not written out in full.
func TestApply_SparseStaysSparse(t *testing.T) {
	s := makeSides(t, tree{"keep": file("k")}, tree{"keep": file("k")}, tree{"keep": file("k")})
	src := filepath.Join(s.theirs, "sparse.img")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range []int64{0, 1 << 30, 3 << 30} {
		if _, err := f.WriteAt([]byte("data at an offset"), off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(4 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	srcBlocks := blocks(t, src)
	if srcBlocks > 1024 {
		t.Skipf("the test filesystem does not keep holes (%d blocks)", srcBlocks)
	}
	p := planSides(t, s, PlanOptions{})
	if err := Apply(context.Background(), p, s.ours, journalPath(t), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(s.ours, "sparse.img")
	fi, err := os.Stat(dst)
	if err != nil || fi.Size() != 4<<30 {
		t.Fatalf("merged file: %v, size %d", err, fi.Size())
	}
	if got := blocks(t, dst); got > 4*srcBlocks+64 {
		t.Errorf("merged file has %d blocks of 512 bytes, the run's %d: holes were written out", got, srcBlocks)
	}
	g, err := os.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	buf := make([]byte, 17)
	if _, err := g.ReadAt(buf, 3<<30); err != nil || string(buf) != "data at an offset" {
		t.Errorf("data at 3 GiB: %q, %v", buf, err)
	}
}

// blocks returns the 512-byte blocks allocated to p.
func blocks(t *testing.T, p string) int64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Blocks
}
