package procfs

import (
	"os"
	"os/exec"
	"slices"
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

// A process whose working directory is in a directory holds it, as does
// one with a file open there; this process is never its own holder.
func TestHolders(t *testing.T) {
	cwdDir, fileDir := t.TempDir(), t.TempDir()
	byCwd := exec.Command("sleep", "1000")
	byCwd.Dir = cwdDir
	byFile := exec.Command("sh", "-c", "exec sleep 1000 3<"+fileDir+"/held", "holder")
	if err := os.WriteFile(fileDir+"/held", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*exec.Cmd{byCwd, byFile} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
	self, err := os.Open(cwdDir)
	if err != nil {
		t.Fatal(err)
	}
	defer self.Close()
	// Descriptors are read only when no process has its cwd there.
	for _, c := range []struct {
		dir  string
		want []Holder
	}{
		{cwdDir, []Holder{{Pid: byCwd.Process.Pid, Command: "sleep", Uses: "cwd"}}},
		{fileDir, []Holder{{Pid: byFile.Process.Pid, Command: "sleep", Uses: "open file"}}},
	} {
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			got := Holders("", []string{c.dir}, 10)
			if slices.Equal(got, c.want) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Holders(%s) = %+v, want %+v", c.dir, got, c.want)
			}
		}
	}
	if got := Holders("", []string{cwdDir, fileDir}, 1); len(got) != 1 || got[0].Uses != "cwd" {
		t.Errorf("Holders with max 1 = %+v", got)
	}
}

// BenchmarkHolders scans every process of the machine, as tine fork does
// for a busy source.
func BenchmarkHolders(b *testing.B) {
	dir := b.TempDir()
	for b.Loop() {
		Holders("", []string{dir}, 10)
	}
}

// BenchmarkAll reads every process's stat, as a supervisor's stop does.
func BenchmarkAll(b *testing.B) {
	for b.Loop() {
		if _, err := All(""); err != nil {
			b.Fatal(err)
		}
	}
}
