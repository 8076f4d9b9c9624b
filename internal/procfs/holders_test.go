package procfs

import (
	"os"
	"path/filepath"
	"testing"
)

// fakeProc makes a proc tree under a temporary directory: each process
// gets comm, cwd and root links, and fd links to the paths given.
func fakeProc(t *testing.T, procs map[string]struct{ cwd, fd string }) string {
	t.Helper()
	root := t.TempDir()
	for pid, p := range procs {
		dir := filepath.Join(root, pid)
		if err := os.MkdirAll(filepath.Join(dir, "fd"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "comm"), []byte("p"+pid+"\n"), 0o644)
		os.Symlink(p.cwd, filepath.Join(dir, "cwd"))
		os.Symlink("/", filepath.Join(dir, "root"))
		if p.fd != "" {
			os.Symlink(p.fd, filepath.Join(dir, "fd", "3"))
		}
	}
	return root
}

func TestHolders_CwdBeforeDescriptors(t *testing.T) {
	t.Run("CwdFirstDescriptorsNotRead", func(t *testing.T) {
		// A shell with its cwd in the view is found; the descriptors of
		// every process are then not read (a readlink each, the cost of
		// a busy fork on a machine with many processes).
		root := fakeProc(t, map[string]struct{ cwd, fd string }{
			"100": {cwd: "/ws/src"},
			"200": {cwd: "/home", fd: "/ws/a.txt"},
		})
		got := Holders(root, []string{"/ws"}, 3)
		if len(got) != 1 || got[0].Pid != 100 || got[0].Uses != "cwd" || got[0].Command != "p100" {
			t.Fatalf("Holders = %+v, want only pid 100 with its cwd in /ws", got)
		}
	})
	t.Run("OpenFileWhenNoCwd", func(t *testing.T) {
		root := fakeProc(t, map[string]struct{ cwd, fd string }{
			"100": {cwd: "/home"},
			"200": {cwd: "/home", fd: "/ws/a.txt"},
			"300": {cwd: "/home", fd: "/wsx/a.txt"},
		})
		got := Holders(root, []string{"/ws"}, 3)
		if len(got) != 1 || got[0].Pid != 200 || got[0].Uses != "open file" {
			t.Fatalf("Holders = %+v, want pid 200 with a file open in /ws", got)
		}
	})
	t.Run("AtMostMax", func(t *testing.T) {
		root := fakeProc(t, map[string]struct{ cwd, fd string }{
			"1": {cwd: "/ws"}, "2": {cwd: "/ws"}, "3": {cwd: "/ws/x"}, "4": {cwd: "/ws"},
		})
		if got := Holders(root, []string{"/ws"}, 3); len(got) != 3 {
			t.Fatalf("Holders = %+v, want 3", got)
		}
	})
}
