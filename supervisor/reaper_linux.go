package supervisor

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// reaper waits for every child of the supervisor, which as the first
// process of the run's pid namespace inherits every orphan in it. Nothing
// else in the supervisor may wait for a process: starts go through spawn.
type reaper struct {
	mu      sync.Mutex
	waiters map[int]chan syscall.WaitStatus
}

func newReaper() *reaper {
	r := &reaper{waiters: map[int]chan syscall.WaitStatus{}}
	ch := make(chan os.Signal, 16)
	signal.Notify(ch, syscall.SIGCHLD)
	go func() {
		for range ch {
			r.reap()
		}
	}()
	return r
}

func (r *reaper) reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
		r.mu.Lock()
		if ch, ok := r.waiters[pid]; ok {
			ch <- ws
			delete(r.waiters, pid)
		}
		r.mu.Unlock()
	}
}

// spawn starts a process, with pid want when not 0 and free (best
// effort), and returns a channel that receives its status once it ends.
// Holding the lock across the start means the reaper cannot reap the
// process before it is registered, and no other start takes the pid.
func (r *reaper) spawn(path string, args []string, attr *os.ProcAttr, want int) (int, <-chan syscall.WaitStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !claimPid(want) {
		raisePids()
	}
	p, err := os.StartProcess(path, args, attr)
	if err != nil {
		return 0, nil, err
	}
	ch := make(chan syscall.WaitStatus, 1)
	r.waiters[p.Pid] = ch
	pid := p.Pid
	p.Release()
	return pid, ch, nil
}

// exitCode is the shell's view of a status: the code, or 128+signal.
func exitCode(ws syscall.WaitStatus) int {
	if ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ws.ExitStatus()
}
