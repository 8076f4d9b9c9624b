//go:build linux

package main

import (
	"os"
	"testing"
	"time"

	"github.com/tinehq/tine/internal/procfs"
	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/runtime"
	"golang.org/x/sys/unix"
)

// TestLive_ZombieSupervisorIsDead: a supervisor killed with SIGKILL that
// nobody reaps (a container whose first process never waits) is a zombie
// with its pid and start time. tine ls calls it dead, tine gc removes its
// files, and tine start launches a new one instead of finding it "already
// running". The test process is the children's subreaper, so the
// supervisor, orphaned when tine start exits, becomes its child, which it
// does not wait for.
func TestLive_ZombieSupervisorIsDead(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Skipf("cannot become a subreaper: %v", err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	e := newEnv(t)
	ws := e.workspaceDir("z")
	writeTestFiles(t, ws, map[string]string{"a.txt": "a\n"})
	e.ok("init", ws)
	var st runtime.StartResult
	e.okJSON(&st, "start", "source", "--json")
	pid := st.Pid
	if p, err := procfs.Read("", pid); err != nil || p.PPid != os.Getpid() {
		t.Skipf("the supervisor %d is not this process's child (%+v, %v)", pid, p, err)
	}
	t.Cleanup(func() {
		var status unix.WaitStatus
		unix.Wait4(pid, &status, 0, nil)
	})
	unix.Kill(pid, unix.SIGKILL)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		p, err := procfs.Read("", pid)
		if err != nil {
			t.Fatalf("the killed supervisor was reaped: %v", err)
		}
		if p.State == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed supervisor is in state %c", p.State)
		}
	}
	if rows := e.ls(); len(rows) != 1 || rows[0].Processes != runtime.ProcDead {
		t.Errorf("tine ls after the supervisor became a zombie: %+v, want processes dead", rows)
	}
	var gc runtime.GCResult
	e.okJSON(&gc, "gc", "--json")
	if len(gc.Supervisors) != 1 {
		t.Errorf("tine gc removed supervisors %q, want the zombie's", gc.Supervisors)
	}
	var again runtime.StartResult
	e.okJSON(&again, "start", "source", "--json")
	if !again.Launched || again.Pid == pid {
		t.Errorf("tine start found the zombie running: %+v", again)
	}
	e.ok("stop", "source") // its cgroup removed, the new supervisor is gone too
	var status unix.WaitStatus
	unix.Wait4(again.Pid, &status, 0, nil)
}
