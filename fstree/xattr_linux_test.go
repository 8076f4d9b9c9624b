package fstree_test

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// xattrsOf returns the extended attributes of p (not following symlinks).
func xattrsOf(t *testing.T, p string) map[string]string {
	t.Helper()
	buf := make([]byte, 64<<10)
	n, err := unix.Llistxattr(p, buf)
	if errors.Is(err, unix.ENOTSUP) {
		return nil
	}
	if err != nil {
		t.Fatalf("llistxattr %s: %v", p, err)
	}
	out := map[string]string{}
	for _, name := range strings.Split(string(buf[:n]), "\x00") {
		if name == "" {
			continue
		}
		val := make([]byte, 64<<10)
		m, err := unix.Lgetxattr(p, name, val)
		if err != nil {
			t.Fatalf("lgetxattr %s %s: %v", p, name, err)
		}
		out[name] = string(val[:m])
	}
	return out
}
