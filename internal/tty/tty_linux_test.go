package tty

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// start runs a shell script on slave as its controlling terminal, as the
// supervisor does inside a run, and closes this process's copy of slave.
func start(t *testing.T, slave *os.File, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	return cmd
}

func TestOpenAndSize(t *testing.T) {
	master, slave, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	defer slave.Close()
	if !term.IsTerminal(int(slave.Fd())) {
		t.Fatalf("%s is not a terminal", slave.Name())
	}
	if err := SetSize(master, Size{Rows: 33, Cols: 111}); err != nil {
		t.Fatal(err)
	}
	if s, err := GetSize(slave); err != nil || s != (Size{Rows: 33, Cols: 111}) {
		t.Errorf("the slave's size is %+v, %v; want 33x111", s, err)
	}
}

// Without a terminal on the caller's side: the default size, input typed
// into the terminal and its end typed as ^D, the output copied.
func TestAttach_Streams(t *testing.T) {
	master, slave, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	in, inW, _ := os.Pipe()
	defer in.Close()
	outPath := filepath.Join(t.TempDir(), "out")
	out, _ := os.Create(outPath)
	defer out.Close()
	s, err := Attach(master, in, out)
	if err != nil {
		t.Fatal(err)
	}
	cmd := start(t, slave, `stty -echo; stty size; tr a-z A-Z; echo "cat ended"`)
	inW.WriteString("hello\n")
	inW.Close()
	done := make(chan error)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("command: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the end of input did not reach the command as ^D")
	}
	s.Finish()
	b, _ := os.ReadFile(outPath)
	if got := string(b); !strings.Contains(got, "24 80\r\n") || !strings.Contains(got, "HELLO\r\n") || !strings.HasSuffix(got, "cat ended\r\n") {
		t.Errorf("output %q", got)
	}
}

// A background job holding the terminal does not keep Finish waiting.
func TestAttach_FinishWithTerminalHeld(t *testing.T) {
	master, slave, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	null, _ := os.Open(os.DevNull)
	defer null.Close()
	outPath := filepath.Join(t.TempDir(), "out")
	out, _ := os.Create(outPath)
	defer out.Close()
	s, err := Attach(master, null, out)
	if err != nil {
		t.Fatal(err)
	}
	cmd := start(t, slave, `trap "" HUP; sleep 60 & echo bye`) // the job outlives the hangup
	cmd.Wait()
	t0 := time.Now()
	s.Finish()
	if d := time.Since(t0); d < Quiet || d > MaxDrain+time.Second {
		t.Errorf("Finish took %v, want the quiet period (%v) and at most %v", d, Quiet, MaxDrain)
	}
	if b, _ := os.ReadFile(outPath); !strings.Contains(string(b), "bye") {
		t.Errorf("output %q", b)
	}
}

// With a terminal on the caller's side: raw mode while attached, restored
// after; its size at the start and after each SIGWINCH.
func TestAttach_LocalTerminal(t *testing.T) {
	localM, local, err := Open() // stands for the caller's terminal emulator
	if err != nil {
		t.Fatal(err)
	}
	defer localM.Close()
	defer local.Close()
	go func() {
		b := make([]byte, 4096)
		for {
			if _, err := localM.Read(b); err != nil {
				return
			}
		}
	}()
	SetSize(localM, Size{Rows: 40, Cols: 120})
	before, _ := unix.IoctlGetTermios(int(local.Fd()), unix.TCGETS)
	master, slave, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer slave.Close()
	s, err := Attach(master, local, local)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := unix.IoctlGetTermios(int(local.Fd()), unix.TCGETS); st.Lflag&(unix.ICANON|unix.ECHO|unix.ISIG) != 0 {
		t.Errorf("the caller's terminal is not raw while attached: lflag %#x", st.Lflag)
	}
	if sz, _ := GetSize(slave); sz != (Size{Rows: 40, Cols: 120}) {
		t.Errorf("size at the start %+v, want 40x120", sz)
	}
	SetSize(localM, Size{Rows: 50, Cols: 132})
	syscall.Kill(os.Getpid(), syscall.SIGWINCH) // what the caller's terminal sends its foreground group
	deadline := time.Now().Add(5 * time.Second)
	for sz, _ := GetSize(slave); sz != (Size{Rows: 50, Cols: 132}); sz, _ = GetSize(slave) {
		if time.Now().After(deadline) {
			t.Fatalf("size after SIGWINCH %+v, want 50x132", sz)
		}
		time.Sleep(10 * time.Millisecond)
	}
	slave.Close()
	s.Finish()
	if after, _ := unix.IoctlGetTermios(int(local.Fd()), unix.TCGETS); *after != *before {
		t.Errorf("the caller's terminal was not restored: %+v, want %+v", after, before)
	}
}
