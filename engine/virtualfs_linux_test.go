package engine

import (
	"errors"
	"testing"

	"github.com/tinehq/tine"
)

// The kernel's virtual file systems, where they are usually mounted or by
// their kind, are no workspaces; tmpfs and ordinary directories are. The
// check only looks: nothing is made or moved.
func TestCheckRealFS(t *testing.T) {
	for _, p := range []string{"/proc", "/proc/1", "/sys", "/sys/kernel", "/dev", "/dev/shm", "/dev/pts"} {
		if err := checkRealFS(p); !errors.Is(err, tine.ErrInvalid) {
			t.Errorf("checkRealFS(%s) = %v, want invalid", p, err)
		}
	}
	for _, p := range []string{t.TempDir(), "/tmp", "/run", "/usr"} {
		if err := checkRealFS(p); err != nil {
			t.Errorf("checkRealFS(%s) = %v, want nil", p, err)
		}
	}
}
