package supervisor

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/tinehq/tine/internal/procfs"
)

// standIn starts a child that stands in for a supervisor of a new
// directory: its pid file written as Launch writes it, and a socket the
// test listens on, so each case can take away one part of the proof.
func standIn(t *testing.T) (dir string, cmd *exec.Cmd, ln *net.UnixListener) {
	t.Helper()
	dir = t.TempDir()
	cmd = exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Skipf("starting sleep: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if err := writePid(dir, cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: SocketPath(dir), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return dir, cmd, ln
}

func TestPid_Proof(t *testing.T) {
	t.Run("Alive", func(t *testing.T) {
		dir, cmd, _ := standIn(t)
		if pid, alive, recorded := Pid(dir); pid != cmd.Process.Pid || !alive || !recorded {
			t.Errorf("Pid = %d, %v, %v; want %d, true, true", pid, alive, recorded, cmd.Process.Pid)
		}
	})
	t.Run("ZombieIsDead", func(t *testing.T) {
		dir, cmd, _ := standIn(t)
		pid := cmd.Process.Pid
		syscall.Kill(pid, syscall.SIGKILL) // and no Wait: nobody reaps it
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if st, err := procfs.Read("", pid); err != nil || st.State == 'Z' {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("the killed stand-in is in state %c", st.State)
			}
		}
		if st, err := procfs.Read("", pid); err != nil || st.State != 'Z' || st.StartTime != StartTime(pid) {
			t.Fatalf("the stand-in is no zombie: %+v, %v", st, err)
		}
		if _, alive, recorded := Pid(dir); alive || !recorded {
			t.Errorf("a zombie supervisor: alive %v, recorded %v; want false, true", alive, recorded)
		}
	})
	t.Run("ReusedPidIsDead", func(t *testing.T) {
		dir, cmd, _ := standIn(t)
		pid := cmd.Process.Pid
		stale := strconv.Itoa(pid) + " " + StartTime(pid) + "0\n" // another incarnation's start time
		if err := os.WriteFile(filepath.Join(dir, pidName), []byte(stale), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, alive, _ := Pid(dir); alive {
			t.Error("a pid with another start time is taken for the supervisor")
		}
	})
	t.Run("SilentIsDead", func(t *testing.T) {
		dir, _, ln := standIn(t)
		ln.Close() // the process lives, but nothing answers on its socket
		if _, alive, _ := Pid(dir); alive {
			t.Error("a supervisor that does not answer on its socket is taken for alive")
		}
	})
	t.Run("NoPidFile", func(t *testing.T) {
		if _, alive, recorded := Pid(t.TempDir()); alive || recorded {
			t.Errorf("no pid file: alive %v, recorded %v", alive, recorded)
		}
	})
}
