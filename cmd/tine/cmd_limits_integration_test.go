//go:build linux

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine/cgroup"
	"github.com/tinehq/tine/config"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/testkit"
)

// TestLive_ForkBombHeldByDefaultLimits is issue 31's limits finding: a
// fork had no pids limit (pids.max = max), so a fork bomb in it reached
// the whole machine. A fork now gets default pids and memory limits with
// no [limits] in tine.toml; a real fork bomb in it stops at the pids
// limit while the host still forks and execs, and discarding the fork
// ends it and removes its cgroup. The source stays unlimited. The bomb is only started once the
// limit is seen in place.
func TestLive_ForkBombHeldByDefaultLimits(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws := e.workspaceDir("app")
	writeTestFiles(t, ws, map[string]string{"f": "x\n"})
	e.ok("init", ws)
	var fork engine.ForkResult
	e.okJSON(&fork, "fork", "source", "--name", "bomb", "--json")
	id := fork.Forks[0].ID
	e.ok("start", "bomb")
	e.ok("start", "source")

	pidsMax := cgroupFile(t, id, "pids", "pids.max", "pids.max")
	if got := readTrim(t, pidsMax); got != strconv.Itoa(config.DefaultForkPids) {
		t.Fatalf("the fork's %s is %q, want %d: not starting the fork bomb", pidsMax, got, config.DefaultForkPids)
	}
	memMax := cgroupFile(t, id, "memory", "memory.max", "memory.limit_in_bytes")
	page := int64(os.Getpagesize())
	if got, want := readTrim(t, memMax), cgroup.MachineMemory()/config.DefaultForkMemoryDivisor/page*page; got != strconv.FormatInt(want, 10) {
		t.Errorf("the fork's %s is %s, want %d", memMax, got, want)
	}
	if got := readTrim(t, cgroupFile(t, fork.Forks[0].Parent, "pids", "pids.max", "pids.max")); got != "max" {
		t.Errorf("the source's pids.max is %s, want max (a person's own workspace is limited only by tine.toml)", got)
	}

	// tine exec waits for the bomb's whole tree, which the discard ends.
	bomb := exec.Command(tineBin, "exec", "bomb", "--", "bash", "-c", ":(){ :|:& };:")
	bomb.Env = e.vars
	if err := bomb.Start(); err != nil {
		t.Fatal(err)
	}
	defer bomb.Process.Kill() // the client, should the test stop early; the run goes with the test's state
	current := filepath.Join(filepath.Dir(pidsMax), "pids.current")
	limit := config.DefaultForkPids
	var n int
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if n, _ = strconv.Atoi(readTrim(t, current)); n >= limit-64 {
			break
		}
	}
	if n < limit-64 || n > limit {
		t.Errorf("the fork bomb holds %d tasks, want it stopped at its limit of %d", n, limit)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if out, err := exec.CommandContext(ctx, "sh", "-c", "echo host").Output(); err != nil || string(out) != "host\n" {
		t.Errorf("the host cannot fork and exec under the fork bomb: %q, %v", out, err)
	}
	t.Logf("fork bomb at %d tasks; the host ran a command in %v", n, time.Since(start))

	e.ok("discard", "--unmerged", "--while-running", "bomb")
	if !waitTimeout(bomb, 30*time.Second) {
		t.Errorf("tine exec of the fork bomb still waits 30s after its fork was discarded")
	}
	for _, dir := range cgroupDirs(id) {
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("cgroup %s of the discarded fork remains", dir)
		}
	}
}

// cgroupFile returns the path of run id's interface file: v2name in its
// unified group when there, else v1name in the controller's v1 hierarchy.
func cgroupFile(t *testing.T, id, controller, v2name, v1name string) string {
	t.Helper()
	for _, p := range []string{
		filepath.Join("/sys/fs/cgroup/tine", id, v2name),
		filepath.Join("/sys/fs/cgroup/unified/tine", id, v2name),
		filepath.Join("/sys/fs/cgroup", controller, "tine", id, v1name),
	} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("run %s has no %s or %s", id, v2name, v1name)
	return ""
}

// readTrim reads a file and trims its white space.
func readTrim(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// waitTimeout waits for cmd, killing it past d; it reports whether cmd
// ended by itself.
func waitTimeout(cmd *exec.Cmd, d time.Duration) bool {
	t := time.AfterFunc(d, func() { cmd.Process.Kill() })
	cmd.Wait()
	return t.Stop()
}
