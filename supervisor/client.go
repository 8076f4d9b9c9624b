package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/tinehq/tine/egress"
	"golang.org/x/sys/unix"
)

// Client calls the supervisor listening in a directory.
type Client struct{ dir string }

// NewClient returns a client of the supervisor of dir.
func NewClient(dir string) *Client { return &Client{dir: dir} }

// conn is one open call.
type conn struct {
	c *net.UnixConn
	r *bufio.Reader
}

// open connects and sends req with files attached.
func (c *Client) open(ctx context.Context, req request, files ...*os.File) (*conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", SocketPath(c.dir))
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, ErrNotRunning
		}
		return nil, fmt.Errorf("calling the supervisor: %w", err)
	}
	uc := nc.(*net.UnixConn)
	b, _ := json.Marshal(req)
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		oob = unix.UnixRights(fds...)
	}
	if _, _, err := uc.WriteMsgUnix(append(b, '\n'), oob, nil); err != nil {
		uc.Close()
		return nil, fmt.Errorf("calling the supervisor: %w", err)
	}
	if dl, ok := ctx.Deadline(); ok {
		uc.SetDeadline(dl)
	}
	return &conn{c: uc, r: bufio.NewReader(uc)}, nil
}

func (k *conn) read() (*response, error) {
	line, err := k.r.ReadBytes('\n')
	if err != nil {
		return nil, fmt.Errorf("the supervisor hung up: %w", err)
	}
	var resp response
	if err := json.Unmarshal(line, &resp); err != nil {
		return nil, fmt.Errorf("bad answer from the supervisor: %w", err)
	}
	if resp.Error != "" {
		return &resp, errors.New(resp.Error)
	}
	return &resp, nil
}

// call makes a call with one answer.
func (c *Client) call(ctx context.Context, req request, files ...*os.File) (*response, error) {
	k, err := c.open(ctx, req, files...)
	if err != nil {
		return nil, err
	}
	defer k.c.Close()
	return k.read()
}

// Status returns the supervisor's services, commands and ports.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	resp, err := c.call(ctx, request{Op: "status"})
	if err != nil {
		return nil, err
	}
	return resp.Status, nil
}

// StartServices starts the services that are not running yet and waits
// until each is ready or has failed; the error names the ones that failed.
// With noWait it answers once their processes run: a service with a ready
// check is then still starting (StateStarting) and becomes ready, or
// failed, later (see Status).
func (c *Client) StartServices(ctx context.Context, svcs []Service, noWait bool) ([]ServiceStatus, error) {
	resp, err := c.call(ctx, request{Op: "services", Services: svcs, NoWait: noWait})
	if resp == nil {
		return nil, err
	}
	return resp.Services, err
}

// StopServices stops the named services (SIGTERM to each one's process
// group, SIGKILL after grace), which stay stopped until StartServices
// starts them again, and returns the run's services as they are then. The
// run and its other services go on.
func (c *Client) StopServices(ctx context.Context, names []string, grace time.Duration) ([]ServiceStatus, error) {
	resp, err := c.call(ctx, request{Op: "stop-services", Names: names, Grace: grace})
	if resp == nil {
		return nil, err
	}
	return resp.Services, err
}

// Stop ends every process of the run (SIGTERM, then SIGKILL after grace)
// and the supervisor itself.
func (c *Client) Stop(ctx context.Context, grace time.Duration) error {
	_, err := c.call(ctx, request{Op: "stop", Grace: grace})
	return err
}

// Publish makes the supervisor accept connections on ln (a listening
// socket opened on the host) and forward each to port inside the run.
func (c *Client) Publish(ctx context.Context, port int, hostAddr string, ln *os.File) error {
	_, err := c.call(ctx, request{Op: "publish", Port: port, HostAddr: hostAddr}, ln)
	return err
}

// Exec starts x inside the run with the given standard streams, calls
// started with its pid (in the run's pid namespace), forwards the signals
// that arrive on sigs to its process group, and returns its exit status
// (128+N when signal N ended it).
func (c *Client) Exec(ctx context.Context, x Exec, stdio [3]*os.File, sigs <-chan os.Signal, started func(pid int)) (int, error) {
	x.HostPorts, x.Egress = egress.AgentPorts(x.Env), egress.AgentRules(x.Env)
	k, err := c.open(ctx, request{Op: "exec", Exec: &x}, stdio[0], stdio[1], stdio[2])
	if err != nil {
		return 0, err
	}
	defer k.c.Close()
	resp, err := k.read()
	if err != nil {
		if resp != nil && resp.Exit != nil {
			return *resp.Exit, err
		}
		return 0, err
	}
	if started != nil {
		started(resp.Pid)
	}
	done := make(chan struct{})
	defer close(done)
	go forwardSignals(k.c, sigs, done)
	resp, err = k.read()
	if err != nil {
		return 0, err
	}
	if resp.Exit == nil {
		return 0, errors.New("the supervisor sent no exit status")
	}
	return *resp.Exit, nil
}

func forwardSignals(c *net.UnixConn, sigs <-chan os.Signal, done <-chan struct{}) {
	for {
		select {
		case s := <-sigs:
			n, ok := s.(syscall.Signal)
			if !ok {
				continue
			}
			b, _ := json.Marshal(request{Op: "signal", Signal: int(n)})
			c.Write(append(b, '\n'))
		case <-done:
			return
		}
	}
}
