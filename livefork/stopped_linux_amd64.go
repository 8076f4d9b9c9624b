package livefork

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/tinehq/tine/confine"
	"golang.org/x/sys/unix"
)

// confineStopped confines every thread of pids, processes held in a
// group stop (criu restore --leave-stopped), as plan says. Each thread is
// seized in its stop, given no_new_privs, the capabilities, the Landlock
// ruleset and the seccomp filter by injected system calls (the kernel
// keeps all four per thread, and a thread can restrict only itself), and
// detached back into the stop: nothing of the tree runs unconfined. They
// run when sent SIGCONT. On error some threads may be confined and others
// not: the caller kills the tree.
func confineStopped(pids []int, plan *confine.Plan) error {
	s := &Session{reqs: make(chan func()), attached: make(map[int]*tracee)}
	go s.serve()
	defer s.Close()
	return s.do(func() error {
		for _, pid := range pids {
			gadget, err := findGadget(pid)
			if err != nil {
				return fmt.Errorf("process %d: %w", pid, err)
			}
			tids, err := threadIDs(pid)
			if err != nil {
				return fmt.Errorf("process %d: %w", pid, err)
			}
			for _, tid := range tids {
				if err := confineThread(tid, gadget, plan); err != nil {
					return fmt.Errorf("thread %d of process %d: %w", tid, pid, err)
				}
			}
		}
		return nil
	})
}

// confineThread seizes thread tid in its group stop and confines it.
func confineThread(tid int, gadget uint64, plan *confine.Plan) error {
	if err := awaitStop(tid); err != nil {
		return err
	}
	t, err := seize(tid)
	if err != nil {
		return err
	}
	t.gadget = gadget
	// Seizing a stopped thread makes it report its group stop as a
	// PTRACE_EVENT_STOP before it could run anything else.
	ws, err := t.wait()
	if err != nil {
		return err
	}
	if event(ws) != unix.PTRACE_EVENT_STOP {
		return errors.Join(fmt.Errorf("stopped by %v, not in its group stop", ws.StopSignal()), t.detach())
	}
	var regs unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &regs); err != nil {
		return errors.Join(fmt.Errorf("registers: %w", err), t.detach())
	}
	in := &injector{t: t, regs: &regs}
	err = in.confineSelf(plan)
	return errors.Join(err, t.restore(&regs))
}

// awaitStop waits for thread tid to enter its group stop: criu sends
// SIGSTOP as it detaches, which the thread takes on its way back to its
// code.
func awaitStop(tid int) error {
	deadline := time.Now().Add(2 * time.Second)
	for {
		st, err := readStatus(tid)
		if err != nil {
			return err
		}
		if st.state == 'T' {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not stopped (state %c)", st.state)
		}
		time.Sleep(time.Millisecond)
	}
}

// confineSelf maps a scratch page, confines the thread as plan says and
// unmaps the page.
func (in *injector) confineSelf(plan *confine.Plan) error {
	var err error
	in.scratch, err = in.call("mmap scratch page", unix.SYS_MMAP, 0, scratchSize,
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS, sx(-1), 0)
	if err != nil {
		return err
	}
	if err := in.confine(plan); err != nil {
		return err
	}
	_, err = in.call("munmap scratch page", unix.SYS_MUNMAP, in.scratch, scratchSize)
	return err
}

// threadIDs lists the threads of pid, in order.
func threadIDs(pid int) ([]int, error) {
	ents, err := os.ReadDir(procPath(pid, "task"))
	if err != nil {
		return nil, err
	}
	var tids []int
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	sort.Ints(tids)
	return tids, nil
}
