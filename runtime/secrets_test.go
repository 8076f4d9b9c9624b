package runtime

import (
	"io/fs"
	"testing"
)

// A process caught inside execve shows an empty environment for a moment:
// the check must read it again, not pass the process as holding nothing
// (the live fork then copied GITHUB_TOKEN into every fork, found by CI).
func TestHeldSecret_ReadsAnEmptyEnvironmentAgain(t *testing.T) {
	secret := func(name string) bool { return name == "GITHUB_TOKEN" }
	reads := 0
	mid := func(int) ([]byte, error) {
		reads++
		if reads < 3 {
			return nil, nil // between exec_mmap and the new stack
		}
		return []byte("PATH=/bin\x00GITHUB_TOKEN=ghp_x\x00"), nil
	}
	if got := heldSecret(42, secret, mid); got != "GITHUB_TOKEN" {
		t.Errorf("a process read mid-exec: held %q, want GITHUB_TOKEN (after %d reads)", got, reads)
	}
	empty := func(int) ([]byte, error) { return nil, nil }
	if got := heldSecret(42, secret, empty); got != "" {
		t.Errorf("a process with no environment at all: held %q", got)
	}
	gone := func(int) ([]byte, error) { return nil, fs.ErrNotExist }
	if got := heldSecret(42, secret, gone); got != "" {
		t.Errorf("a process gone: held %q", got)
	}
	plain := func(int) ([]byte, error) { return []byte("HOME=/root\x00"), nil }
	if got := heldSecret(42, secret, plain); got != "" {
		t.Errorf("no secret: held %q", got)
	}
}
