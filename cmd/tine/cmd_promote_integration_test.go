//go:build linux

package main

import (
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tinehq/tine/internal/testkit"
)

// TestCLI_PromoteFullDisk: promote with the state directory on a full
// disk fails with one line saying which disk is full and what to free,
// leaves everything exactly as before (on the copy backend the old
// source's saved version stayed behind, taking the space the retry needed),
// fails the same way when retried, and succeeds once space is freed.
func TestCLI_PromoteFullDisk(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	// leave is the space left free: enough for the store, too little for
	// what promote copies (copy: the old source's files, then the fork's;
	// overlay: the source's 1.5 MB delta).
	for backend, leave := range map[string]int64{"copy": 6 << 20, "overlay": 900 << 10} {
		t.Run(backend, func(t *testing.T) { testPromoteFullDisk(t, backend, leave) })
	}
}

func testPromoteFullDisk(t *testing.T, backend string, leave int64) {
	e := newEnv(t)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", e.home).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v: %s", err, out)
	}
	ws := e.workspaceDir("app")
	for _, f := range []string{"f1", "f2", "f3"} {
		writeRandom(t, filepath.Join(ws, f), 1<<20)
	}
	e.ok("init", "--backend", backend, ws)
	e.ok("fork", "source", "--name", "f1")
	e.execSh("f1", "echo changed > f1")
	writeRandom(t, filepath.Join(ws, "g"), 1500<<10)
	filler := filepath.Join(e.home, "filler")
	fillTo(t, filler, leave)
	before := e.state()
	beforeFiles := walkHost(t, ws)
	for _, try := range []string{"promote", "its retry"} {
		r := e.tine("promote", "--drop-source-changes", "f1")
		requireOneLineError(t, r, exitError)
		if !strings.Contains(r.stderr, "the disk holding "+e.home+" is full") || !strings.Contains(r.stderr, "nothing changed") {
			t.Errorf("%s on a full disk: %q, want it to name the full disk %s and say nothing changed", try, r.stderr, e.home)
		}
		requireSameState(t, try+" on a full disk", before, e.state())
		requireSameTree(t, try+" on a full disk: the workspace", beforeFiles, walkHost(t, ws), compareOpts{})
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	e.ok("promote", "--drop-source-changes", "f1")
	if got := readTestFile(t, ws, "f1"); got != "changed\n" {
		t.Errorf("after the retry with space freed, f1 = %q, want the fork's", got)
	}
}

// writeRandom writes n random bytes (which no filesystem compresses) to
// path.
func writeRandom(t *testing.T, path string, n int) {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// fillTo writes the file path until its filesystem has leave bytes free.
func fillTo(t *testing.T, path string, leave int64) {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(filepath.Dir(path), &st); err != nil {
		t.Fatal(err)
	}
	if n := int64(st.Bavail)*st.Bsize - leave; n > 0 {
		if err := os.WriteFile(path, make([]byte, n), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
