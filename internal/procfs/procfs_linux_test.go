package procfs

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// zombie starts a child, SIGKILLs it and does not reap it, so it stays a
// zombie until the test ends: what a supervisor becomes when it is killed in
// a container whose first process never waits.
func zombie(t *testing.T) (pid int, start string) {
	t.Helper()
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Skipf("starting sleep: %v", err)
	}
	t.Cleanup(func() { cmd.Wait() })
	pid = cmd.Process.Pid
	st, err := Read("", pid)
	if err != nil || Alive("", pid, st.StartTime) != true {
		t.Fatalf("the live child %d: %+v, %v; Alive = false", pid, st, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		z, err := Read("", pid)
		if err != nil {
			t.Fatalf("the killed child was reaped: %v", err)
		}
		if z.State == 'Z' {
			return pid, st.StartTime
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed child is in state %c, not a zombie", z.State)
		}
	}
}

func TestAlive(t *testing.T) {
	me, err := Read("", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	zpid, zstart := zombie(t)
	z, _ := Read("", zpid)
	for _, c := range []struct {
		name  string
		pid   int
		start string
		want  bool
	}{
		{"self", me.Pid, me.StartTime, true},
		{"ZombieIsDead", zpid, zstart, false},
		{"OtherStartTimeIsDead", me.Pid, me.StartTime + "1", false},
		{"NoStartTime", me.Pid, "", false},
		{"NoPid", 0, me.StartTime, false},
	} {
		if got := Alive("", c.pid, c.start); got != c.want {
			t.Errorf("%s: Alive(%d, %q) = %v, want %v", c.name, c.pid, c.start, got, c.want)
		}
	}
	if !z.Exited() || me.Exited() {
		t.Errorf("Exited: zombie %c → %v, self %c → %v", z.State, z.Exited(), me.State, me.Exited())
	}
}
