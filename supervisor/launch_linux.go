package supervisor

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/tinehq/tine/confine"
)

// argv0 marks the re-executed tine binary that must become a supervisor.
const argv0 = "tine-supervisor"

const specEnv = "_TINE_SUPERVISOR_SPEC"

// launchTimeout bounds how long a new supervisor may take to come up.
const launchTimeout = 10 * time.Second

// IsSupervisor reports whether this process was launched as a supervisor,
// as the wrapper a supervisor starts confined processes through, or as a
// freeze's watchdog; main calls Main first thing when it is.
func IsSupervisor() bool {
	return len(os.Args) > 0 && (os.Args[0] == argv0 || os.Args[0] == confine.WrapperName) || isWatchdog()
}

// Launch starts the supervisor of spec in new namespaces and returns its
// host pid once it listens. Between the namespaces' creation and the
// supervisor starting anything, setup runs with its pid: the place to put
// it in a cgroup and wire its network namespace, so everything it starts
// inherits both. On any failure the new process is killed and nothing of
// it remains but its log.
func Launch(ctx context.Context, spec Spec, setup func(pid int) error) (int, error) {
	if err := os.MkdirAll(spec.Dir, 0o700); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(spec.LogDir, 0o755); err != nil {
		return 0, err
	}
	Forget(spec.Dir)
	cmd, pipes, err := command(spec)
	if err != nil {
		return 0, err
	}
	defer pipes.close()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting the supervisor: %w", err)
	}
	pipes.closeChildEnds()
	pid := cmd.Process.Pid
	err = handshake(ctx, spec, pipes, pid, setup)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		Forget(spec.Dir)
		return 0, err
	}
	if err := writePid(spec.Dir, pid); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return 0, err
	}
	go cmd.Wait() // reaps the supervisor when it ends, in a long-lived caller (tine serve)
	return pid, nil
}

// launchPipes carry the handshake: the child says "up" once its namespaces
// are set, waits for "go" (sent after setup), then says "ok" once it
// listens, or "error: ..." at any step.
type launchPipes struct {
	status, statusW *os.File // child → parent
	gate, gateW     *os.File // parent → child
	log             *os.File
	mounts          *os.File // the host's mount table, which the child follows
	hostNet         *os.File // the host's network namespace, for HostPorts and the resolver's upstream
}

func (p *launchPipes) closeChildEnds() {
	p.statusW.Close()
	p.gate.Close()
	p.log.Close()
	p.mounts.Close()
	if p.hostNet != nil {
		p.hostNet.Close()
	}
}

func (p *launchPipes) close() {
	for _, f := range []*os.File{p.status, p.statusW, p.gate, p.gateW, p.log, p.mounts, p.hostNet} {
		if f != nil {
			f.Close()
		}
	}
}

func command(spec Spec) (*exec.Cmd, *launchPipes, error) {
	var p launchPipes
	var err error
	if p.status, p.statusW, err = os.Pipe(); err != nil {
		return nil, nil, err
	}
	if p.gate, p.gateW, err = os.Pipe(); err != nil {
		p.status.Close()
		p.statusW.Close()
		return nil, nil, err
	}
	p.log, err = os.OpenFile(LogPath(spec.Dir), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		p.close()
		return nil, nil, err
	}
	if p.mounts, err = os.Open("/proc/self/mountinfo"); err != nil {
		p.close()
		return nil, nil, err
	}
	files := []*os.File{p.statusW, p.gate, p.mounts} // fds 3, 4 and 5 (hostMountsFD)
	// The host's network, for host ports (those an exec asks for too) and
	// the resolver's upstream.
	if spec.Net {
		if p.hostNet, err = os.Open("/proc/thread-self/ns/net"); err != nil {
			p.close()
			return nil, nil, fmt.Errorf("the host's network namespace: %w", err)
		}
		spec.HostNetFD = 3 + len(files)
		files = append(files, p.hostNet)
	}
	flags := uintptr(syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWUTS | syscall.CLONE_NEWIPC)
	if spec.Net {
		flags |= syscall.CLONE_NEWNET
	}
	cmd := &exec.Cmd{
		Path:        "/proc/self/exe",
		Args:        []string{argv0},
		Env:         append(os.Environ(), specEnv+"="+encodeSpec(spec)),
		Dir:         "/",
		Stdout:      p.log,
		Stderr:      p.log,
		ExtraFiles:  files,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true, Cloneflags: flags},
	}
	return cmd, &p, nil
}

func handshake(ctx context.Context, spec Spec, p *launchPipes, pid int, setup func(int) error) error {
	ctx, cancel := context.WithTimeout(ctx, launchTimeout)
	defer cancel()
	lines := make(chan string, 2)
	go func() {
		sc := bufio.NewScanner(p.status)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	if err := expect(ctx, lines, "up", spec); err != nil {
		return err
	}
	if setup != nil {
		if err := setup(pid); err != nil {
			return err
		}
	}
	if _, err := p.gateW.WriteString("go\n"); err != nil {
		return fmt.Errorf("starting the supervisor: %w", err)
	}
	return expect(ctx, lines, "ok", spec)
}

func expect(ctx context.Context, lines <-chan string, want string, spec Spec) error {
	select {
	case line, ok := <-lines:
		if line == want {
			return nil
		}
		if msg, found := strings.CutPrefix(line, "error: "); found {
			return errors.New(msg)
		}
		if !ok {
			return fmt.Errorf("the supervisor exited while starting (see %s)", LogPath(spec.Dir))
		}
		return fmt.Errorf("the supervisor said %q", line)
	case <-ctx.Done():
		return fmt.Errorf("the supervisor did not start within %v (see %s)", launchTimeout, LogPath(spec.Dir))
	}
}
