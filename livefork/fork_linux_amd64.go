package livefork

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// childPlan is what the parent's stop yields: the child, the parent's saved
// registers (which the child gets too) and the state to re-create.
type childPlan struct {
	child *tracee
	regs  unix.PtraceRegs
	cwd   string
	fds   []fdPlan
}

// fdPlan is a descriptor of the child to re-create: a workspace file (path
// set) or a socket, with its flags and offset at fork time.
type fdPlan struct {
	fd   int
	path string
	info fdInfo
}

func (s *Session) fork(pid int, t Target) (Result, error) {
	res := Result{Pid: pid}
	tr, err := s.tracee(pid)
	if err != nil {
		return res, err
	}
	if err := precheck(tr, t.Workspace); err != nil {
		return res, err
	}
	delete(s.attached, pid) // detached by forkStopped, whatever happens
	start := time.Now()
	p, resumed, err := tr.forkStopped(t.Workspace)
	res.Pause = resumed.Sub(start)
	if p != nil && p.child != nil {
		res.Child = p.child.pid
		if err == nil {
			err = p.setup(t)
		}
		if err != nil {
			p.child.kill()
		}
	}
	return res, err
}

// tracee returns pid's tracee, seizing it if it is not attached.
func (s *Session) tracee(pid int) (*tracee, error) {
	if t := s.attached[pid]; t != nil {
		return t, nil
	}
	t, err := seize(pid)
	if err != nil {
		return nil, err
	}
	s.attached[pid] = t
	return t, nil
}

// precheck runs on the ptrace thread, whose tid is the TracerPid of pid. It
// refuses a process that became ineligible since Check, or that
// maps a workspace file shared and writable, and finds its gadget; all
// before the process is stopped.
func precheck(tr *tracee, ws string) error {
	if err := refuse(tr.pid, unix.Gettid()); err != nil {
		return err
	}
	path, err := sharedWritableUnder(tr.pid, ws)
	if err != nil {
		return fmt.Errorf("livefork: maps of %d: %w", tr.pid, err)
	}
	if path != "" {
		return &RefusedError{Pid: tr.pid, Reasons: []string{"shared writable mapping of " + path}}
	}
	if tr.gadget == 0 {
		if tr.gadget, err = findGadget(tr.pid); err != nil {
			return fmt.Errorf("livefork: process %d: %w", tr.pid, err)
		}
	}
	return nil
}

// forkStopped interrupts the parent, injects the clone, records what the
// child must re-create, restores the parent's registers and detaches it. It
// returns when the parent runs again.
func (tr *tracee) forkStopped(ws string) (p *childPlan, resumed time.Time, err error) {
	if err = tr.interrupt(); err != nil {
		return nil, time.Now(), fmt.Errorf("livefork: %w", err)
	}
	p = &childPlan{}
	if err = unix.PtraceGetRegs(tr.pid, &p.regs); err != nil {
		err = fmt.Errorf("livefork: registers of %d: %w", tr.pid, err)
		return nil, time.Now(), errors.Join(err, tr.detach())
	}
	defer func() {
		err = errors.Join(err, tr.restore(&p.regs))
		resumed = time.Now()
	}()
	if err = recheck(tr.pid); err != nil {
		return p, resumed, err
	}
	child, err := tr.clone(&p.regs)
	if tr.child != 0 { // even on error: the caller kills it
		p.child = &tracee{pid: tr.child, gadget: tr.gadget}
	}
	if err != nil {
		return p, resumed, err
	}
	if p.cwd, p.fds, err = snapshot(child, ws); err != nil {
		err = fmt.Errorf("livefork: child %d: %w", child, err)
	}
	return p, resumed, err
}

// recheck repeats the cheap checks while the process is stopped: a thread
// or child created since precheck would be fatal to the fork.
func recheck(pid int) error {
	var reasons []string
	for _, check := range []func(int, int) ([]string, error){checkStatus, checkChildren} {
		r, err := check(pid, unix.Gettid())
		if err != nil {
			return fmt.Errorf("livefork: inspect process %d: %w", pid, err)
		}
		reasons = append(reasons, r...)
	}
	if len(reasons) > 0 {
		return &RefusedError{Pid: pid, Reasons: reasons}
	}
	return nil
}

// restore gives a stopped tracee its saved registers back and detaches it.
// It is called from a signal-delivery stop, so the kernel restarts an
// interrupted system call as usual. A tracee that died is not an error.
func (t *tracee) restore(regs *unix.PtraceRegs) error {
	err := unix.PtraceSetRegs(t.pid, regs)
	if err == unix.ESRCH {
		return nil
	}
	if err != nil {
		return fmt.Errorf("livefork: restore registers of %d: %w", t.pid, err)
	}
	unix.PtraceSetOptions(t.pid, 0)
	return t.detach()
}

// clone injects clone(CLONE_PARENT|SIGCHLD) and returns the child's pid as
// the tracer sees it. CLONE_PARENT gives the child to the parent's parent
// (the run's supervisor), so the origin gains no child to reap.
func (t *tracee) clone(regs *unix.PtraceRegs) (int, error) {
	const opts = unix.PTRACE_O_TRACEFORK | unix.PTRACE_O_TRACECLONE | unix.PTRACE_O_TRACEVFORK
	if err := unix.PtraceSetOptions(t.pid, opts); err != nil {
		return 0, fmt.Errorf("livefork: set options of %d: %w", t.pid, err)
	}
	t.child = 0
	_, err := t.syscall(regs, unix.SYS_CLONE, unix.CLONE_PARENT|uint64(unix.SIGCHLD), 0, 0, 0, 0)
	if errors.Is(err, unix.EINVAL) {
		err = fmt.Errorf("%w (the init of a pid namespace cannot clone with CLONE_PARENT)", err)
	}
	if err != nil {
		return 0, fmt.Errorf("livefork: inject clone into %d: %w", t.pid, err)
	}
	if t.child == 0 {
		return 0, fmt.Errorf("livefork: clone in %d reported no fork event", t.pid)
	}
	return t.child, nil
}

// snapshot reads the child's working directory and the descriptors to
// re-create: regular files and directories under ws, and sockets. The
// child's table is a fixed copy, but offsets are shared with the parent,
// so this runs while the parent is still stopped.
func snapshot(pid int, ws string) (string, []fdPlan, error) {
	cwd, err := os.Readlink(procPath(pid, "cwd"))
	if err != nil {
		return "", nil, err
	}
	fds, err := listFDs(pid)
	if err != nil {
		return "", nil, err
	}
	var plan []fdPlan
	for _, f := range fds {
		sock := isSocket(f.link)
		if !sock && !reopenable(pid, f, ws) {
			continue
		}
		fi, err := readFdinfo(pid, f.fd)
		if err != nil {
			return "", nil, err
		}
		p := fdPlan{fd: f.fd, info: fi}
		if !sock {
			p.path = f.link
		}
		plan = append(plan, p)
	}
	return cwd, plan, nil
}

// reopenable reports whether f is a regular file or directory under ws.
// Deleted files, devices, FIFOs and files outside ws stay shared.
func reopenable(pid int, f fdLink, ws string) bool {
	if !under(ws, f.link) || strings.HasSuffix(f.link, " (deleted)") {
		return false
	}
	st, err := os.Stat(procPath(pid, "fd", strconv.Itoa(f.fd)))
	return err == nil && (st.Mode().IsRegular() || st.IsDir())
}
