package capability

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tinehq/tine/internal/testkit"
)

// TestWriteFile_OwnerNeverLocksOut: the token a run reads is replaced
// (each fork issues it again) while the run's processes, as the
// workspace's owner, read it. A reader as that owner, reading in a loop
// while root replaces the file, must never be refused: the new file
// belongs to the owner before it takes the old one's place. (Written as
// root, then given to the owner, it refused some reads in between.)
func TestWriteFile_OwnerNeverLocksOut(t *testing.T) {
	uid, gid := testkit.TineUser(t, "the token belongs to another user")
	dir, err := os.MkdirTemp("", "captoken")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	path := filepath.Join(dir, "token")
	c, _ := New("rabc")
	if err := WriteFile(path, c, uid, gid); err != nil {
		t.Fatal(err)
	}
	reader := exec.Command("sh", "-c", `n=0; while [ ! -e stop ]; do cat token >/dev/null 2>&1 || n=$((n+1)); done; echo $n`)
	reader.Dir = dir
	reader.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	var out strings.Builder
	reader.Stdout = &out
	if err := reader.Start(); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		c.Generation = i
		if err := WriteFile(path, c, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(dir, "stop"), nil, 0o644)
	if err := reader.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := strings.TrimSpace(out.String()); n != "0" {
		t.Errorf("the owner was refused its token %s times while it was replaced", n)
	}
	if fi, err := os.Stat(path); err != nil || fi.Sys().(*syscall.Stat_t).Uid != uint32(uid) {
		t.Errorf("the token is not the owner's: %v", err)
	}
}
