package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"github.com/tinehq/tine/confine"
	"github.com/tinehq/tine/internal/mnt"
	"github.com/tinehq/tine/sandbox/netproxy"
	"github.com/tinehq/tine/supervisor"
	"golang.org/x/sys/unix"
)

// command builds the re-execution of this binary in a new mount namespace
// (and, without root, a user namespace mapping the caller to themselves:
// the command runs as the user's own uid, as it would through the system
// daemon, not as root of the namespace; pip, initdb and ssh behave by
// it). The child keeps the namespace's capabilities as ambient ones to
// mount, and drops them before it executes the command.
func command(spec Spec) (*exec.Cmd, error) {
	env, err := encode(spec)
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{childName}, Env: append(os.Environ(), specEnv+"="+env)}
	attr := &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() != 0 {
		attr.Cloneflags = syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
		attr.GidMappingsEnableSetgroups = false
		attr.AmbientCaps = allCaps()
	}
	if spec.NetSetup != nil {
		attr.Unshareflags |= syscall.CLONE_NEWNET
	}
	if spec.Terminal != nil { // its stdin: a session of its own with it as the controlling terminal
		attr.Setsid, attr.Setctty, attr.Ctty = true, true, 0
	}
	cmd.SysProcAttr = attr
	return cmd, nil
}

// enter runs in the child: mounts are already private to it (the Go
// runtime made / MS_PRIVATE|MS_REC after unsharing).
func enter(spec Spec) (int, error) {
	runtime.LockOSThread()
	if spec.NetSetup != nil && netproxy.Prepare(*spec.NetSetup) != nil {
		os.Exit(ExitCannotRun) // the parent says why, and runs the command in its own network
	}
	if spec.View != "" {
		if err := mnt.Bind(spec.View, spec.Workspace); err != nil {
			return ExitCannotRun, fmt.Errorf("mounting the run's files: %w", err)
		}
	}
	hidden, others, err := supervisor.Cover(spec.Workspace, spec.Hide)
	if err != nil {
		return ExitCannotRun, fmt.Errorf("confining the run's mounts: %w", err)
	}
	if spec.ReportFD > 0 {
		report(spec.ReportFD, Cover{Hidden: hidden, Others: others})
	}
	if err := unix.Chdir(spec.Dir); err != nil {
		return ExitCannotRun, fmt.Errorf("chdir %s: %w", spec.Dir, err)
	}
	if len(spec.Args) == 0 {
		return ExitCannotRun, errors.New("no command")
	}
	path, err := lookPath(spec.Args[0], spec.Env)
	if err != nil {
		return ExitNotFound, err
	}
	// The command gets none of the namespace's capabilities: it runs as
	// the user does.
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return ExitCannotRun, fmt.Errorf("dropping the sandbox's capabilities: %w", err)
	}
	if spec.Confine != nil {
		if err := confine.Apply(*spec.Confine); err != nil {
			return ExitCannotRun, fmt.Errorf("confining the command: %w", err)
		}
	}
	err = unix.Exec(path, spec.Args, spec.Env)
	if errors.Is(err, unix.ENOENT) {
		return ExitNotFound, fmt.Errorf("%s: %w", spec.Args[0], err)
	}
	return ExitCannotRun, fmt.Errorf("%s: %w", spec.Args[0], err)
}

// allCaps is every capability the kernel knows (0 to cap_last_cap): the
// child, a user of its own namespace rather than its root, keeps them
// through its execution to mount and set its network up.
func allCaps() []uintptr {
	last := uintptr(unix.CAP_LAST_CAP)
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n >= 0 {
			last = uintptr(n)
		}
	}
	caps := make([]uintptr, 0, last+1)
	for c := uintptr(0); c <= last; c++ {
		caps = append(caps, c)
	}
	return caps
}

// report writes c to descriptor fd, the parent's pipe, and closes it.
func report(fd int, c Cover) {
	f := os.NewFile(uintptr(fd), "report")
	json.NewEncoder(f).Encode(c)
	f.Close()
}

// lookPath finds name on the command's own PATH, seen from inside the run.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			os.Setenv("PATH", p)
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s: command not found", name)
	}
	return p, nil
}
