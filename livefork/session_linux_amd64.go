package livefork

import (
	"errors"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
)

// Session holds processes attached with PTRACE_SEIZE. All ptrace requests
// are made by one goroutine locked to one OS thread, as the kernel requires
// that the thread that attached a process makes every later request. The
// processes are never attached with PTRACE_O_EXITKILL: if tine dies, the
// kernel detaches them and they live on. Between Seize and Fork or Close a
// signal sent to a seized process holds it in a ptrace stop until the
// session next acts on it (the signal is then delivered), so keep that
// window short.
type Session struct {
	mu       sync.Mutex // serialises calls; guards closed
	closed   bool
	reqs     chan func()
	attached map[int]*tracee // used only on the ptrace thread
}

// Seize attaches to every pid with PTRACE_SEIZE, which does not stop them:
// it works on tasks frozen by the cgroup freezer (v1 or v2), which go on
// once thawed. The caller must thaw them before Fork. On error nothing stays
// attached.
func Seize(pids []int) (*Session, error) {
	s := &Session{reqs: make(chan func()), attached: make(map[int]*tracee)}
	go s.serve()
	err := s.do(func() error {
		for _, pid := range pids {
			t, err := seize(pid)
			if err != nil {
				return err
			}
			s.attached[pid] = t
		}
		return nil
	})
	if err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}

// serve runs requests on a locked thread. It never unlocks: when it
// returns, the thread exits, and the kernel detaches anything still
// attached.
func (s *Session) serve() {
	runtime.LockOSThread()
	for f := range s.reqs {
		f()
	}
}

// do runs f on the ptrace thread unless s is closed.
func (s *Session) do(f func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return s.run(f)
}

// run runs f on the ptrace thread with SIGINT, SIGTERM and SIGHUP deferred
// until it returns, so that tine never exits mid-injection. s.mu is held.
func (s *Session) run(f func() error) error {
	defer deferSignals()()
	done := make(chan error, 1)
	s.reqs <- func() { done <- f() }
	return <-done
}

// deferSignals catches SIGINT, SIGTERM and SIGHUP; the returned function
// stops catching them and raises again those that arrived.
func deferSignals() func() {
	ch := make(chan os.Signal, 8)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	return func() {
		signal.Stop(ch)
		for {
			select {
			case sig := <-ch:
				syscall.Kill(os.Getpid(), sig.(syscall.Signal))
			default:
				return
			}
		}
	}
}

// Fork makes pid fork itself and moves the child into t's namespaces and
// cgroups; see the package documentation. pid is interrupted only for the
// clone and detached afterwards; a pid not attached to s (for example one
// already forked) is seized first. Registers are restored on every path. A
// process that has become ineligible since Check is refused with a
// *RefusedError; if the child cannot be set up it is killed, and the error
// is returned with Result.Child still naming it.
func (s *Session) Fork(pid int, t Target) (Result, error) {
	res := Result{Pid: pid}
	if err := t.validate(); err != nil {
		return res, err
	}
	err := s.do(func() (err error) {
		res, err = s.fork(pid, t)
		return err
	})
	return res, err
}

// Close detaches every process still attached, after stopping it (a
// tracee must be stopped to be detached), and ends the session. A process
// that exited meanwhile is not an error.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	err := s.run(s.detachAll)
	s.closed = true
	close(s.reqs)
	return err
}

func (s *Session) detachAll() error {
	var errs []error
	for pid, t := range s.attached {
		delete(s.attached, pid)
		if err := t.interrupt(); err != nil {
			if !errors.Is(err, ErrExited) {
				errs = append(errs, err)
			}
			continue
		}
		errs = append(errs, t.detach())
	}
	return errors.Join(errs...)
}
