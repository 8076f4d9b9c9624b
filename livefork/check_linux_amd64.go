package livefork

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Check reports why pid cannot be live-forked, as a *RefusedError listing
// every reason, or nil when it can. A process is refused unless it is a
// running 64-bit x86-64 process, not traced, single-threaded, without child
// processes, without MADV_DONTFORK memory, and with no sockets but
// listening TCP sockets and no epoll instance (which the child would share
// with the parent). Other errors report that pid could not be inspected.
func Check(pid int) error {
	return refuse(pid, 0)
}

// refuse is Check allowing tracer as the process's tracer.
func refuse(pid, tracer int) error {
	reasons, err := refusals(pid, tracer)
	if err != nil {
		return fmt.Errorf("livefork: inspect process %d: %w", pid, err)
	}
	if len(reasons) > 0 {
		return &RefusedError{Pid: pid, Reasons: reasons}
	}
	return nil
}

func refusals(pid, tracer int) ([]string, error) {
	var reasons []string
	for _, check := range []func(int, int) ([]string, error){checkStatus, checkArch, checkChildren, checkMemory, checkFDs} {
		r, err := check(pid, tracer)
		if err != nil {
			return nil, err
		}
		reasons = append(reasons, r...)
	}
	return reasons, nil
}

func checkStatus(pid, tracer int) ([]string, error) {
	st, err := readStatus(pid)
	if err != nil {
		return nil, err
	}
	var r []string
	switch st.state {
	case 'Z', 'X':
		r = append(r, "is a zombie")
	case 'T':
		r = append(r, "is stopped")
	case 't': // a ptrace stop: fine if it is ours
		if tracer == 0 || st.tracer != tracer {
			r = append(r, "is stopped")
		}
	}
	if st.tracer != 0 && st.tracer != tracer {
		r = append(r, fmt.Sprintf("already traced by pid %d", st.tracer))
	}
	if st.threads > 1 {
		r = append(r, fmt.Sprintf("%d threads", st.threads))
	}
	return r, nil
}

func checkArch(pid, _ int) ([]string, error) {
	ok, err := isX8664(pid)
	if err != nil {
		return []string{"executable unreadable (" + err.Error() + ")"}, nil
	}
	if !ok {
		return []string{"not an x86-64 process"}, nil
	}
	return nil, nil
}

func checkChildren(pid, _ int) ([]string, error) {
	kids, err := childPids(pid)
	if err != nil || len(kids) == 0 {
		return nil, err
	}
	s := make([]string, len(kids))
	for i, k := range kids {
		s[i] = strconv.Itoa(k)
	}
	return []string{fmt.Sprintf("has child processes (pids %s)", strings.Join(s, ", "))}, nil
}

func checkMemory(pid, _ int) ([]string, error) {
	dc, err := hasDontfork(pid)
	if err != nil || !dc {
		return nil, err
	}
	return []string{"MADV_DONTFORK memory"}, nil
}

func checkFDs(pid, _ int) ([]string, error) {
	fds, err := listFDs(pid)
	if err != nil {
		return nil, err
	}
	pidfd := -1
	defer func() {
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
	}()
	var r []string
	for _, f := range fds {
		switch {
		case f.link == "anon_inode:[eventpoll]":
			r = append(r, fmt.Sprintf("epoll instance on fd %d", f.fd))
		case isSocket(f.link):
			if pidfd < 0 {
				if pidfd, err = unix.PidfdOpen(pid, 0); err != nil {
					return nil, fmt.Errorf("pidfd_open: %w", err)
				}
			}
			si, err := inspectSocket(pidfd, f.fd)
			if err != nil {
				return nil, err
			}
			if !si.isTCPListener() {
				r = append(r, fmt.Sprintf("%s on fd %d", si.describe(), f.fd))
			}
		}
	}
	return r, nil
}

// ptraceSupported says the ptrace engine works on this platform.
const ptraceSupported = true
