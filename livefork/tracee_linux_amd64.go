package livefork

import (
	"errors"
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// tracee is a process attached with PTRACE_SEIZE. Its methods must run on
// the OS thread that attached it.
type tracee struct {
	pid    int
	gadget uint64           // address of a syscall instruction (0f 05)
	held   []syscall.Signal // signals caught in signal-delivery stops, delivered on detach
	child  int              // pid from the last fork event
}

func ptrace(req, pid int, addr, data uintptr) error {
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, uintptr(req), uintptr(pid), addr, data, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

func seize(pid int) (*tracee, error) {
	if err := ptrace(unix.PTRACE_SEIZE, pid, 0, 0); err != nil {
		return nil, fmt.Errorf("livefork: seize %d: %w", pid, err)
	}
	return &tracee{pid: pid}, nil
}

func event(ws unix.WaitStatus) int { return int(ws >> 16) }

// isInterrupt matches the PTRACE_EVENT_STOP of PTRACE_INTERRUPT, and the
// first stop of an automatically attached child.
func isInterrupt(ws unix.WaitStatus) bool {
	return ws.StopSignal() == unix.SIGTRAP && event(ws) == unix.PTRACE_EVENT_STOP
}

// isStep matches the SIGTRAP signal-delivery stop after a single step.
func isStep(ws unix.WaitStatus) bool {
	return ws.StopSignal() == unix.SIGTRAP && event(ws) == 0
}

func (t *tracee) wait() (unix.WaitStatus, error) {
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(t.pid, &ws, unix.WALL, nil)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return ws, fmt.Errorf("wait for %d: %w", t.pid, err)
		case ws.Exited() || ws.Signaled():
			return ws, fmt.Errorf("%w: pid %d", ErrExited, t.pid)
		}
		return ws, nil
	}
}

// stopUntil waits for a stop that want accepts. Other stops are dealt with
// and the tracee resumed with resume: a signal is held back to be delivered
// on detach, a fork event records the child's pid.
func (t *tracee) stopUntil(want func(unix.WaitStatus) bool, resume func() error) error {
	for {
		ws, err := t.wait()
		if err != nil {
			return err
		}
		if want(ws) {
			return nil
		}
		switch ev := event(ws); ev {
		case 0:
			t.held = append(t.held, ws.StopSignal())
		case unix.PTRACE_EVENT_FORK, unix.PTRACE_EVENT_VFORK, unix.PTRACE_EVENT_CLONE:
			msg, err := unix.PtraceGetEventMsg(t.pid)
			if err != nil {
				return fmt.Errorf("fork event of %d: %w", t.pid, err)
			}
			t.child = int(msg)
		}
		if err := resume(); err != nil {
			return err
		}
	}
}

// interrupt stops a running tracee with PTRACE_INTERRUPT.
func (t *tracee) interrupt() error {
	if err := ptrace(unix.PTRACE_INTERRUPT, t.pid, 0, 0); err != nil {
		return fmt.Errorf("interrupt %d: %w", t.pid, err)
	}
	return t.stopUntil(isInterrupt, t.cont)
}

func (t *tracee) cont() error { return unix.PtraceCont(t.pid, 0) }
func (t *tracee) step() error { return unix.PtraceSingleStep(t.pid) }

// detach lets a stopped tracee go, delivering the signals held back from it.
func (t *tracee) detach() error {
	var sig syscall.Signal
	if len(t.held) > 0 {
		sig = t.held[0]
		for _, s := range t.held[1:] {
			unix.Tgkill(t.pid, t.pid, s) // queued again; delivered once detached
		}
		t.held = nil
	}
	if err := ptrace(unix.PTRACE_DETACH, t.pid, 0, uintptr(sig)); err != nil {
		return fmt.Errorf("detach %d: %w", t.pid, err)
	}
	return nil
}

// restartErrnos are the kernel's internal "restart this system call" codes:
// ERESTARTSYS, ERESTARTNOINTR, ERESTARTNOHAND and ERESTART_RESTARTBLOCK.
func isRestart(e syscall.Errno) bool { return e >= 512 && e <= 516 }

// syscall makes the stopped tracee execute system call nr with args, on
// top of base, and returns its result. The injected registers carry
// orig_rax = -1 so that the kernel's restart logic leaves them alone; an
// injected call interrupted by a signal is simply made again.
func (t *tracee) syscall(base *unix.PtraceRegs, nr uintptr, args ...uint64) (uint64, error) {
	for {
		ret, err := t.syscallOnce(base, nr, args)
		var errno syscall.Errno
		if errors.As(err, &errno) && isRestart(errno) {
			continue
		}
		return ret, err
	}
}

func (t *tracee) syscallOnce(base *unix.PtraceRegs, nr uintptr, args []uint64) (uint64, error) {
	regs := *base
	regs.Rip, regs.Rax, regs.Orig_rax = t.gadget, uint64(nr), ^uint64(0)
	dst := [...]*uint64{&regs.Rdi, &regs.Rsi, &regs.Rdx, &regs.R10, &regs.R8, &regs.R9}
	for i, a := range args {
		*dst[i] = a
	}
	if err := unix.PtraceSetRegs(t.pid, &regs); err != nil {
		return 0, fmt.Errorf("set registers of %d: %w", t.pid, err)
	}
	if err := t.step(); err != nil {
		return 0, fmt.Errorf("single-step %d: %w", t.pid, err)
	}
	if err := t.stopUntil(isStep, t.step); err != nil {
		return 0, err
	}
	if err := unix.PtraceGetRegs(t.pid, &regs); err != nil {
		return 0, fmt.Errorf("get registers of %d: %w", t.pid, err)
	}
	if regs.Rip != t.gadget+2 {
		return 0, fmt.Errorf("injected syscall %d in %d stopped at %#x, not after the gadget", nr, t.pid, regs.Rip)
	}
	if r := int64(regs.Rax); r < 0 && r > -4096 {
		return 0, syscall.Errno(-r)
	}
	return regs.Rax, nil
}

// poke writes data into the tracee's memory at addr.
func (t *tracee) poke(addr uint64, data []byte) error {
	local := []unix.Iovec{{Base: unsafe.SliceData(data)}}
	local[0].SetLen(len(data))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(data)}}
	n, err := unix.ProcessVMWritev(t.pid, local, remote, 0)
	if err == nil && n != len(data) {
		err = fmt.Errorf("short write (%d of %d bytes)", n, len(data))
	}
	if err != nil {
		return fmt.Errorf("write memory of %d: %w", t.pid, err)
	}
	return nil
}

// kill ends the tracee with SIGKILL and waits until it is gone.
func (t *tracee) kill() {
	if unix.Kill(t.pid, unix.SIGKILL) != nil {
		return
	}
	for {
		if _, err := t.wait(); err != nil {
			return // ErrExited, or nothing left to wait for
		}
		t.cont()
	}
}

// sx sign-extends an int into a register value.
func sx(v int) uint64 { return uint64(int64(v)) }
