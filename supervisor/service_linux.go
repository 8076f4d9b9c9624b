package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// service is one declared service as the supervisor runs it.
type service struct {
	s    *server
	spec Service
	log  string

	mu       sync.Mutex
	st       ServiceStatus
	exited   chan struct{} // closed when the current process ends
	stopping bool
}

// startServices starts every service of svcs that is not running, then
// waits for each to be ready (unless noWait: then the ready checks go on
// after it returns, and services without one are ready at once); the
// error names each that failed.
func (s *server) startServices(svcs []Service, noWait bool) ([]ServiceStatus, error) {
	var started []*service
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return nil, errors.New("the run is stopping")
	}
	for _, sp := range svcs {
		svc, ok := s.services[sp.Name]
		if ok && svc.running() {
			continue
		}
		svc = &service{s: s, spec: sp, log: filepath.Join(s.spec.LogDir, sp.Name+".log")}
		s.services[sp.Name] = svc
		started = append(started, svc)
	}
	s.mu.Unlock()
	// Every process starts before any ready check runs, those asking for a
	// pid (Service.Pid) first, lowest first: a check's shell would take
	// the next pid, which may be the one a later service asks for.
	slices.SortStableFunc(started, func(a, b *service) int { return pinOrder(a.spec.Pid) - pinOrder(b.spec.Pid) })
	errs := make([]error, len(started))
	for i, svc := range started {
		errs[i] = svc.begin()
	}
	var wg sync.WaitGroup
	for i, svc := range started {
		if errs[i] != nil {
			continue
		}
		switch {
		case svc.check() == nil: // ready once it runs
			errs[i] = svc.becomeReady()
		case noWait:
			go svc.logReady()
		default:
			wg.Go(func() { errs[i] = svc.becomeReady() })
		}
	}
	wg.Wait()
	st := s.status()
	return st.Services, errors.Join(errs...)
}

// pinOrder sorts services asking for a pid first, by that pid.
func pinOrder(pid int) int {
	if pid == 0 {
		return math.MaxInt32
	}
	return pid
}

// stopServices stops the named services that run, giving each grace
// (defaultGrace when 0) between SIGTERM and SIGKILL to its process group;
// they are not restarted. It returns the services as they are then.
func (s *server) stopServices(names []string, grace time.Duration) []ServiceStatus {
	if grace <= 0 {
		grace = defaultGrace
	}
	s.mu.Lock()
	var svcs []*service
	for _, n := range names {
		if svc, ok := s.services[n]; ok {
			svcs = append(svcs, svc)
		}
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, svc := range svcs {
		wg.Go(func() { svc.stop(grace) })
	}
	wg.Wait()
	return s.status().Services
}

// stop ends the service's process: SIGTERM, then SIGKILL to its process
// group once grace has passed.
func (v *service) stop(grace time.Duration) {
	v.mu.Lock()
	pid := v.st.Pid
	v.mu.Unlock()
	ended := v.terminate()
	select {
	case <-ended:
	case <-time.After(grace):
		if pid > 0 {
			syscall.Kill(-pid, syscall.SIGKILL)
		}
		<-ended
	}
}

func (v *service) running() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.st.State == StateStarting || v.st.State == StateReady
}

func (v *service) snapshot() ServiceStatus {
	v.mu.Lock()
	defer v.mu.Unlock()
	st := v.st
	st.Name, st.Log = v.spec.Name, v.log
	return st
}

// run starts the service and waits until it is ready.
func (v *service) run() error {
	if err := v.launch(); err != nil {
		return err
	}
	return v.becomeReady()
}

// launch starts the service's process; a service without a ready check is
// ready once it runs.
func (v *service) launch() error {
	if err := v.begin(); err != nil {
		return err
	}
	if v.check() == nil {
		return v.becomeReady()
	}
	return nil
}

// begin starts the service's process, recording a failure.
func (v *service) begin() error {
	if err := v.start(); err != nil {
		v.set(func(st *ServiceStatus) { st.State, st.Error = StateFailed, err.Error() })
		return fmt.Errorf("service %s: %w", v.spec.Name, err)
	}
	return nil
}

// logReady waits for a launched service's ready check, logging a failure
// (its status says it too).
func (v *service) logReady() {
	if err := v.becomeReady(); err != nil {
		log.Print(err)
	}
}

// becomeReady waits for the service's ready check and records the result.
func (v *service) becomeReady() error {
	if err := v.waitReady(); err != nil {
		v.set(func(st *ServiceStatus) { st.State, st.Error = StateFailed, err.Error() })
		return fmt.Errorf("service %s: %w (log: %s)", v.spec.Name, err, v.log)
	}
	v.set(func(st *ServiceStatus) {
		if st.State == StateStarting {
			st.State = StateReady
		}
	})
	return nil
}

func (v *service) set(f func(*ServiceStatus)) {
	v.mu.Lock()
	defer v.mu.Unlock()
	f(&v.st)
}

func (v *service) env() []string {
	env := append(append(append([]string(nil), v.s.spec.Env...), v.spec.Env...), "TINE_SERVICE="+v.spec.Name)
	return v.s.spec.processEnv(env, nil)
}

// start launches the service's process with its output appended to its log.
func (v *service) start() error {
	out, err := os.OpenFile(v.log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer null.Close()
	fmt.Fprintf(out, "--- tine: starting %s at %s: %s\n", v.spec.Name, time.Now().UTC().Format(time.RFC3339), v.spec.Command)
	attr := &os.ProcAttr{Dir: v.spec.Dir, Env: v.env(), Files: []*os.File{null, out, out},
		Sys: v.s.sysAttr(false)}
	pid, done, err := v.s.spawnAt("/bin/sh", []string{"sh", "-c", v.spec.Command}, attr, v.spec.Pid)
	if err != nil {
		return err
	}
	exited := make(chan struct{})
	v.mu.Lock()
	v.st = ServiceStatus{Pid: pid, State: StateStarting, Started: time.Now().UTC(), Restarts: v.st.Restarts}
	v.exited = exited
	v.mu.Unlock()
	go v.watch(pid, done, exited)
	return nil
}

// watch records the process's end and restarts it as its policy says.
func (v *service) watch(pid int, done <-chan syscall.WaitStatus, exited chan struct{}) {
	ws := <-done
	code := exitCode(ws)
	v.mu.Lock()
	v.st.Exit, v.st.Pid = &code, 0
	switch {
	case v.stopping:
		v.st.State = StateStopped
	case code == 0:
		v.st.State = StateExited
	default:
		v.st.State = StateFailed
	}
	restart := !v.stopping && (v.spec.Restart == "always" || (v.spec.Restart == "on-failure" && code != 0))
	n := v.st.Restarts
	v.mu.Unlock()
	close(exited)
	log.Printf("service %s (pid %d) ended with status %d", v.spec.Name, pid, code)
	if restart {
		time.Sleep(backoff(n))
		v.mu.Lock()
		v.st.Restarts++
		stop := v.stopping
		v.mu.Unlock()
		if !stop {
			if err := v.run(); err != nil {
				log.Print(err)
			}
		}
	}
}

func backoff(n int) time.Duration {
	d := 500 * time.Millisecond << min(n, 6)
	return min(d, 30*time.Second)
}

// terminate sends SIGTERM to the service's process group and returns a
// channel closed once it has ended.
func (v *service) terminate() <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.stopping = true
	if v.exited == nil {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	if v.st.Pid > 0 {
		syscall.Kill(-v.st.Pid, syscall.SIGTERM)
	}
	return v.exited
}

// waitReady waits for the service's ready check, its process's end, or the
// timeout.
func (v *service) waitReady() error {
	ctx, cancel := context.WithTimeout(context.Background(), v.timeout())
	defer cancel()
	v.mu.Lock()
	exited := v.exited
	v.mu.Unlock()
	check := v.check()
	if check == nil {
		return nil
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if check(ctx) {
			return nil
		}
		select {
		case <-exited:
			st := v.snapshot()
			if st.Exit != nil {
				return fmt.Errorf("exited with status %d before it was ready", *st.Exit)
			}
			return errors.New("exited before it was ready")
		case <-ctx.Done():
			return fmt.Errorf("not ready after %v", v.timeout())
		case <-tick.C:
		}
	}
}

func (v *service) timeout() time.Duration {
	if v.spec.ReadyTimeout > 0 {
		return v.spec.ReadyTimeout
	}
	return 30 * time.Second
}

// check returns the service's ready probe, or nil when it has none.
func (v *service) check() func(context.Context) bool {
	switch {
	case v.spec.ReadyPort > 0:
		addr := fmt.Sprintf("127.0.0.1:%d", v.spec.ReadyPort)
		return func(ctx context.Context) bool {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", addr)
			if err == nil {
				c.Close()
			}
			return err == nil
		}
	case v.spec.ReadySocket != "":
		return func(ctx context.Context) bool {
			var d net.Dialer
			c, err := d.DialContext(ctx, "unix", v.spec.ReadySocket)
			if err == nil {
				c.Close()
			}
			return err == nil
		}
	case strings.TrimSpace(v.spec.ReadyCommand) != "":
		return v.commandCheck
	}
	return nil
}

// commandCheck runs the ready command (through the reaper, which owns every
// wait in the supervisor) and reports whether it exited 0.
func (v *service) commandCheck(ctx context.Context) bool {
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer null.Close()
	attr := &os.ProcAttr{Dir: v.spec.Dir, Env: v.env(), Files: []*os.File{null, null, null},
		Sys: v.s.sysAttr(false)}
	pid, done, err := v.s.spawn("/bin/sh", []string{"sh", "-c", v.spec.ReadyCommand}, attr)
	if err != nil {
		return false
	}
	select {
	case ws := <-done:
		return ws.Exited() && ws.ExitStatus() == 0
	case <-ctx.Done():
		syscall.Kill(-pid, syscall.SIGKILL)
		<-done
		return false
	}
}
