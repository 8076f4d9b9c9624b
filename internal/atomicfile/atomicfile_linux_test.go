package atomicfile

import (
	"bytes"
	"errors"
	"path/filepath"
	"syscall"
	"testing"
)

// A write that fails part way (the file size limit stops it with EFBIG;
// Go ignores SIGXFSZ) leaves the old file as it was and no temporary file.
func TestWriteFailsMidway(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := Write(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	small := lim
	small.Cur = 4096
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &small); err != nil {
		t.Skipf("cannot lower the file size limit: %v", err)
	}
	err := Write(p, bytes.Repeat([]byte("x"), 64<<10), 0o644, Durable)
	if rerr := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); rerr != nil {
		t.Fatal(rerr)
	}
	if !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("Write past the size limit: %v, want EFBIG", err)
	}
	checkContent(t, p, "old")
	checkOnly(t, dir, "f")
}
