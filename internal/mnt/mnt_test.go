package mnt

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

func TestError_NamesEverything(t *testing.T) {
	e := &Error{Op: "mount", Source: "overlay", Target: "/x", Flags: 0, Data: "lowerdir=/a", Err: syscall.EINVAL}
	msg := e.Error()
	for _, want := range []string{"mount", "overlay", "/x", "lowerdir=/a", "invalid argument"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
	if !errors.Is(e, syscall.EINVAL) {
		t.Error("Error does not unwrap to its errno")
	}
}

func TestIsMountpoint(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("mounts need Linux")
	}
	dir := t.TempDir()
	if ok, err := IsMountpoint(dir); err != nil || ok {
		t.Fatalf("IsMountpoint(plain dir) = %v, %v", ok, err)
	}
	if ok, err := IsMountpoint("/proc"); err != nil || !ok {
		t.Fatalf("IsMountpoint(/proc) = %v, %v", ok, err)
	}
	if _, err := IsMountpoint(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing path: %v", err)
	}
}

func TestBindAndUnmountAll(t *testing.T) {
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("requires root on Linux: bind mounts")
	}
	src, dst := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // stacked twice: UnmountAll removes both
		if err := Bind(src, dst); err != nil {
			t.Fatal(err)
		}
	}
	if ok, _ := IsMountpoint(dst); !ok {
		t.Fatal("bind target is not a mount point")
	}
	if b, err := os.ReadFile(filepath.Join(dst, "f")); err != nil || string(b) != "x" {
		t.Fatalf("through the bind: %q, %v", b, err)
	}
	if err := UnmountAll(dst); err != nil {
		t.Fatal(err)
	}
	if ok, _ := IsMountpoint(dst); ok {
		t.Error("still mounted after UnmountAll")
	}
	if err := UnmountAll(filepath.Join(dst, "missing")); err != nil {
		t.Errorf("UnmountAll of a missing path: %v", err)
	}
}
