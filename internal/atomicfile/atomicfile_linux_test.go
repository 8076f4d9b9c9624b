package atomicfile

import (
	"bytes"
	"errors"
	"os"
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

// WriteOwned gives the new file to its owner before it replaces the old
// one; a failed chown (as a user who may not) leaves the old file and no
// temporary file.
func TestWriteOwned(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		if err := WriteOwned(path, []byte("new"), 0o600, 0, 0); err == nil {
			t.Fatal("a normal user gave a file to root")
		}
		if b, _ := os.ReadFile(path); string(b) != "old" {
			t.Errorf("after a failed chown: %q", b)
		}
		if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
			t.Errorf("left behind: %v", ents)
		}
		return
	}
	if err := WriteOwned(path, []byte("new"), 0o600, 4321, 4322, ExactMode); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 4321 || st.Gid != 4322 || fi.Mode().Perm() != 0o600 {
		t.Errorf("owner %d:%d mode %v, want 4321:4322 0600", st.Uid, st.Gid, fi.Mode())
	}
}
