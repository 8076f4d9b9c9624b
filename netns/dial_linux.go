package netns

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// DialIn connects to address over network from the network namespace of
// process pid (a run's supervisor): the socket is made there, so it
// reaches what listens on that namespace's loopback only, and stays there.
// The dial runs on a thread of its own that joins the namespace and comes
// back; one that cannot come back ends with its goroutine.
func DialIn(ctx context.Context, pid int, network, address string) (net.Conn, error) {
	target, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if err != nil {
		return nil, fmt.Errorf("the network of process %d: %w", pid, err)
	}
	defer target.Close()
	own, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		return nil, err
	}
	defer own.Close()
	type dialed struct {
		c   net.Conn
		err error
	}
	ch := make(chan dialed, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- dialed{err: fmt.Errorf("joining the network of process %d: %w", pid, err)}
			return
		}
		c, err := (&net.Dialer{}).DialContext(ctx, network, address)
		if berr := unix.Setns(int(own.Fd()), unix.CLONE_NEWNET); berr != nil {
			if c != nil {
				c.Close()
			}
			ch <- dialed{err: fmt.Errorf("back to this process's network: %w", berr)} // the thread stays locked, and ends
			return
		}
		runtime.UnlockOSThread()
		ch <- dialed{c, err}
	}()
	d := <-ch
	return d.c, d.err
}
