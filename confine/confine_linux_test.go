package confine

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The test binary re-executed by runConfined confines itself and reports,
// one word per line, what it could still do.
func TestMain(m *testing.M) {
	if os.Getenv("CONFINE_TEST_CAPS") != "" { // DropCaps, then what a program it execs holds
		runtime.LockOSThread()
		if err := Apply(Spec{DropCaps: true}); err != nil {
			os.Stdout.WriteString("apply-failed " + err.Error() + "\n")
			os.Exit(1)
		}
		err := unix.Exec("/bin/cat", []string{"cat", "/proc/self/status"}, os.Environ())
		os.Stdout.WriteString("exec-failed " + err.Error() + "\n")
		os.Exit(1)
	}
	if name := os.Getenv("CONFINE_TEST_SCOPED"); name != "" { // Scoped, then what it can still reach
		scopedChild(name)
	}
	if dir := os.Getenv("CONFINE_TEST_DIR"); dir != "" {
		if err := Apply(Spec{Writable: []string{dir}, Seccomp: true, DenyMounts: true, DenySetID: true}); err != nil {
			os.Stdout.WriteString("apply-failed " + err.Error() + "\n")
			os.Exit(1)
		}
		try := func(what string, err error) {
			if err != nil {
				os.Stdout.WriteString(what + "-refused\n")
			} else {
				os.Stdout.WriteString(what + "-ok\n")
			}
		}
		try("inside", os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644))
		try("outside", os.WriteFile(filepath.Join(os.Getenv("CONFINE_TEST_OUTSIDE"), "f"), []byte("x"), 0o644))
		_, err := os.ReadFile("/etc/hostname")
		try("read", err)
		_, err = unix.Klogctl(3, make([]byte, 16)) // SYSLOG_ACTION_READ_ALL
		try("syslog", err)
		try("mount", unix.Mount("tmpfs", dir, "tmpfs", 0, ""))
		exe := filepath.Join(dir, "exe")
		try("create", os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755))
		try("chmod-x", os.Chmod(exe, 0o700))
		try("chmod-setuid", unix.Chmod(exe, 0o4755))
		try("chmod-setgid", unix.Fchmodat(unix.AT_FDCWD, exe, 0o2755, 0))
		fd, err := unix.Open(filepath.Join(dir, "suid"), unix.O_CREAT|unix.O_WRONLY, 0o4755)
		if err == nil {
			unix.Close(fd)
		}
		try("create-setuid", err)
		fd, err = unix.Open(exe, unix.O_RDONLY, 0o4755) // no O_CREAT: the mode is not used
		if err == nil {
			unix.Close(fd)
		}
		try("open-mode-unused", err)
		params := make([]byte, 120) // struct io_uring_params, zeroed
		ring, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
		if errno == 0 {
			unix.Close(int(ring))
			try("io_uring", nil)
		} else {
			try("io_uring", errno)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// scopedChild reports, one word per line, whether it reaches the abstract
// socket name and the process CONFINE_TEST_PID (both outside) before and
// after Apply(Spec{Scoped: true}), and a child of its own after.
func scopedChild(name string) {
	pid, _ := strconv.Atoi(os.Getenv("CONFINE_TEST_PID"))
	try := func(what string, err error) {
		if err != nil {
			os.Stdout.WriteString(what + "-refused\n")
		} else {
			os.Stdout.WriteString(what + "-ok\n")
		}
	}
	reach := func(when string) {
		c, err := net.Dial("unix", "@"+name)
		if err == nil {
			c.Close()
		}
		try(when+"-abstract", err)
		try(when+"-signal", unix.Kill(pid, 0))
	}
	reach("before")
	if err := Apply(Spec{Scoped: true}); err != nil {
		os.Stdout.WriteString("apply-failed " + err.Error() + "\n")
		os.Exit(1)
	}
	reach("after")
	own := exec.Command("sleep", "30")
	if err := own.Start(); err != nil {
		os.Stdout.WriteString("start-failed " + err.Error() + "\n")
		os.Exit(1)
	}
	try("own-signal", own.Process.Signal(unix.SIGKILL))
	own.Wait()
	os.Exit(0)
}

// Scoped keeps signals and abstract sockets within the process's tree: a
// process of the same user outside it, and an abstract socket it listens
// on, are out of reach (the daemon-less sandbox has no pid namespace: a
// fork could kill its owner's every process).
func TestApply_Scoped(t *testing.T) {
	if a := Probe(Spec{Scoped: true}); !a.Scoped {
		t.Skipf("needs Landlock ABI %d: %v", scopedABI, a.Unavailable)
	}
	name := "tine-scope-test-" + strconv.Itoa(os.Getpid())
	l, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	outside := exec.Command("sleep", "30")
	if err := outside.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { outside.Process.Kill(); outside.Wait() }()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CONFINE_TEST_SCOPED="+name, "CONFINE_TEST_PID="+strconv.Itoa(outside.Process.Pid))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := "before-abstract-ok before-signal-ok after-abstract-refused after-signal-refused own-signal-ok"
	if got := strings.Join(strings.Fields(string(out)), " "); got != want {
		t.Errorf("scoped: %q, want %q", got, want)
	}
}

func TestApply(t *testing.T) {
	inside, outside := t.TempDir(), t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CONFINE_TEST_DIR="+inside, "CONFINE_TEST_OUTSIDE="+outside)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// As root, only Landlock and seccomp refuse the write, syslog and mount.
	want := "inside-ok outside-refused read-ok syslog-refused mount-refused create-ok chmod-x-ok chmod-setuid-refused " +
		"chmod-setgid-refused create-setuid-refused open-mode-unused-ok io_uring-refused"
	if got := strings.Join(strings.Fields(string(out)), " "); got != want {
		t.Errorf("confined: %q, want %q", got, want)
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); err == nil {
		t.Error("a confined process wrote outside its writable paths")
	}
}

// DropCaps holds root to KeptCaps, through exec (the bounding set too:
// root's exec would otherwise get every capability back).
func TestApply_DropCaps(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: only root has capabilities to drop")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CONFINE_TEST_CAPS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got := map[string]uint64{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.HasPrefix(k, "Cap") {
			got[k], _ = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	want := keptMask()
	for _, set := range []string{"CapEff", "CapPrm", "CapBnd"} {
		if got[set] != want {
			t.Errorf("%s after exec = %#x, want %#x", set, got[set], want)
		}
	}
	if got["CapAmb"] != 0 || got["CapInh"]&^want != 0 {
		t.Errorf("ambient %#x, inheritable %#x", got["CapAmb"], got["CapInh"])
	}
	if want&(1<<unix.CAP_NET_ADMIN) != 0 || want&(1<<unix.CAP_SYS_ADMIN) != 0 || want&(1<<unix.CAP_NET_RAW) != 0 {
		t.Errorf("KeptCaps keeps network or system administration: %#x", want)
	}
}

func TestCommand(t *testing.T) {
	path, argv, env, err := Command(Spec{Seccomp: true}, "/bin/sh", []string{"sh", "-c", "true"})
	if err != nil || path != "/proc/self/exe" || strings.Join(argv, " ") != WrapperName+" /bin/sh sh -c true" ||
		!strings.HasPrefix(env, specEnv+"={") {
		t.Errorf("Command = %q %q %q %v", path, argv, env, err)
	}
}

// The plan a live-forked copy gets holds the rules Apply enforces: "/"
// read-only, a writable directory writable (renames between them too), a
// writable file writable but given no directory's rights (which the kernel
// refuses on a file), and the filter of every denied call.
func TestPlanFor(t *testing.T) {
	const (
		write = 1 << 1  // LANDLOCK_ACCESS_FS_WRITE_FILE
		dirs  = 1 << 3  // READ_DIR, a directory's right
		refer = 1 << 13 // REFER
	)
	for abi, want := range map[int]bool{0: false, 1: false, 2: true, 5: true, 7: true} {
		rs := ruleset(abi, []string{"/w"})
		if (rs != nil) != want {
			t.Fatalf("ruleset for ABI %d: %+v, want one: %v", abi, rs, want)
		}
		if rs == nil {
			continue
		}
		if rs.Root&write != 0 || rs.Dir&(write|refer) != write|refer || rs.File&write == 0 || rs.File&(dirs|refer) != 0 ||
			(rs.Root|rs.Dir|rs.File)&^rs.Handled != 0 {
			t.Errorf("ruleset for ABI %d: %+v", abi, rs)
		}
	}
	spec := Spec{Writable: []string{t.TempDir()}, Seccomp: true, DenyMounts: true}
	p, err := PlanFor(spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Applied.Spec(); !slices.Equal(got.Writable, spec.Writable) || got.Seccomp != spec.Seccomp || got.DenyMounts != spec.DenyMounts {
		t.Errorf("the recorded confinement gives %+v back, not %+v", got, spec)
	}
	loose, err := PlanFor(Spec{Seccomp: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Filter) == 0 || len(p.Filter)%8 != 0 || len(p.Filter) <= len(loose.Filter) || loose.Landlock != nil {
		t.Errorf("filters of %d and %d bytes (the source's), source's ruleset %+v", len(p.Filter), len(loose.Filter), loose.Landlock)
	}
}
