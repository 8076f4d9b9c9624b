package supervisor

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// hostNet dials from the host's network namespace, for a run with a
// network of its own: the host's loopback ports it forwards
// (forwardHostPorts) and its resolver's upstream servers (startEgress),
// which the run's own rules would refuse.
type hostNet struct{ host, own *os.File }

// openHostNet opens the host's network namespace the launcher passed
// (Spec.HostNetFD, when the run has host ports or an egress policy) and
// the run's own, to come back to after each dial; nil if none was passed.
// It must run in the run's network namespace.
func openHostNet(spec Spec) (*hostNet, error) {
	if spec.HostNetFD == 0 {
		return nil, nil
	}
	syscall.CloseOnExec(spec.HostNetFD) // never inherited by the run's processes
	host := os.NewFile(uintptr(spec.HostNetFD), "host-net")
	own, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		host.Close()
		return nil, fmt.Errorf("the run's network namespace: %w", err)
	}
	return &hostNet{host: host, own: own}, nil
}

// Dial connects to address over network from the host's network (a
// socket stays in the namespace it was made in).
func (n *hostNet) Dial(ctx context.Context, network, address string) (net.Conn, error) {
	var c net.Conn
	err := n.in(func() (err error) {
		c, err = (&net.Dialer{}).DialContext(ctx, network, address)
		return err
	})
	if err != nil && c != nil { // made, but the thread could not go back
		c.Close()
		c = nil
	}
	return c, err
}

// Read reads the files at paths from the host's network, where
// /proc/thread-self/net/ lists the host's sockets.
func (n *hostNet) Read(paths ...string) ([]string, error) {
	var out []string
	err := n.in(func() (err error) {
		out, err = readAll(paths...)
		return err
	})
	return out, err
}

// in runs f on a thread that joins the host's network namespace for it,
// and goes back to the run's after. If it cannot go back, the thread stays
// locked and ends with its goroutine.
func (n *hostNet) in(f func() error) error {
	runtime.LockOSThread()
	if err := unix.Setns(int(n.host.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("joining the host's network: %w", err)
	}
	ferr := f()
	if err := unix.Setns(int(n.own.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("back to the run's network: %w", err) // the thread stays locked, and dies
	}
	runtime.UnlockOSThread()
	return ferr
}
