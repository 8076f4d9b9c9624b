package livefork

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tinehq/tine/confine"
)

// ErrUnsupported is returned by every entry point on platforms other than
// Linux on x86-64.
var ErrUnsupported = errors.New("livefork: ptrace live fork needs Linux on x86-64")

// ErrClosed is returned by a Session that has been closed.
var ErrClosed = errors.New("livefork: session is closed")

// ErrExited reports that a traced process exited while it was being worked on.
var ErrExited = errors.New("livefork: process exited")

// RefusedError reports why a process cannot be live-forked. Each reason is a
// short human phrase such as "3 threads" or "connected socket on fd 5".
type RefusedError struct {
	Pid     int
	Reasons []string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("process %d cannot be live-forked: %s", e.Pid, strings.Join(e.Reasons, "; "))
}

// Target describes where the child of a live fork goes.
type Target struct {
	// MountNS is the path of the fork's mount namespace, for example
	// /proc/SUPERVISORPID/ns/mnt. The child opens it, so it is resolved in
	// the origin process's view of the file system.
	MountNS string
	// NetNS is the optional path of the fork's network namespace, opened
	// after joining MountNS, so it is resolved in the fork's view. Without
	// it the child stays in the origin's network namespace, where its
	// listening sockets cannot be re-created.
	NetNS string
	// Workspace is the workspace path: descriptors of regular files and
	// directories under it are re-opened in the new mount namespace.
	Workspace string
	// Stdout and Stderr are paths of the child's log files, opened
	// O_WRONLY|O_CREAT|O_APPEND after entering MountNS and duplicated onto
	// descriptors 1 and 2. Empty leaves the inherited descriptor.
	Stdout, Stderr string
	// CgroupProcs are cgroup.procs files the child's pid is written to, by
	// the tracer, before the child runs.
	CgroupProcs []string
	// Confine is how the fork confines its processes, given to the child
	// last, by injected system calls; nil leaves it the origin's
	// confinement alone. A child that cannot be so confined is killed.
	Confine *confine.Plan
}

func (t Target) validate() error {
	if t.MountNS == "" {
		return errors.New("livefork: target has no mount namespace")
	}
	if !strings.HasPrefix(t.Workspace, "/") {
		return fmt.Errorf("livefork: workspace %q is not an absolute path", t.Workspace)
	}
	return nil
}

// Result describes one live fork.
type Result struct {
	Pid   int           // the origin process
	Child int           // the new process; 0 when none was created
	Pause time.Duration // from interrupting Pid until it ran again
}
