package procfs

import (
	"os"
	"os/exec"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// A process whose cwd was a directory before a filesystem was mounted on
// it reads as in the directory, but sits beneath the mount and holds
// nothing of it: Holders leaves it out. It named both before, so tine
// release blamed a shell that was not in the way.
func TestHolders_BeneathTheMountHoldsNothing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("requires root: mounts a tmpfs")
	}
	dir := t.TempDir()
	start := func() *exec.Cmd {
		c := exec.Command("sleep", "60")
		c.Dir = dir
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c
	}
	under := start()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	inside := start()
	got := Holders("", []string{dir}, 3)
	if len(got) != 1 || got[0].Pid != inside.Process.Pid || got[0].Uses != "cwd" {
		t.Fatalf("Holders = %+v; want only pid %d (in the mount), not pid %d (beneath it)", got, inside.Process.Pid, under.Process.Pid)
	}
	if s := got[0].String(); s != "pid "+strconv.Itoa(inside.Process.Pid)+" sleep has its cwd in it" {
		t.Errorf("String() = %q", s)
	}
}
