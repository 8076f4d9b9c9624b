package supervisor

import (
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// forwardHostPorts makes each of spec.HostPorts of the host's loopback
// reachable at the run's own 127.0.0.1: a run with a network of its own
// reaches a local model proxy or mock API there as it would on the host,
// and nothing else of the host's loopback. Each connection is dialled from
// a thread that joins the host's network namespace for the dial.
func forwardHostPorts(spec Spec) error {
	if !spec.Net || len(spec.HostPorts) == 0 {
		return nil
	}
	syscall.CloseOnExec(spec.HostNetFD) // never inherited by the run's processes
	host := os.NewFile(uintptr(spec.HostNetFD), "host-net")
	own, err := os.Open("/proc/thread-self/ns/net") // the run's, to come back to after each dial
	if err != nil {
		return err
	}
	ns := namespaces{host: host, own: own}
	for _, port := range spec.HostPorts {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return fmt.Errorf("the host's port %d in the run: %w", port, err)
		}
		go acceptHost(ln, ns, port)
	}
	return nil
}

// namespaces are the host's network namespace and the run's own.
type namespaces struct{ host, own *os.File }

func acceptHost(ln net.Listener, ns namespaces, port int) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			up, err := dialHost(ns, port)
			if err != nil {
				log.Printf("host port %d: %v", port, err)
				return
			}
			defer up.Close()
			splice(c, up)
		}()
	}
}

// dialHost connects to the host's 127.0.0.1:port from the host's network
// namespace. The thread goes back to the run's namespace after; if it
// cannot, it stays locked and ends with its goroutine.
func dialHost(ns namespaces, port int) (net.Conn, error) {
	runtime.LockOSThread()
	if err := unix.Setns(int(ns.host.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("joining the host's network: %w", err)
	}
	c, derr := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err := unix.Setns(int(ns.own.Fd()), unix.CLONE_NEWNET); err != nil {
		if c != nil {
			c.Close()
		}
		return nil, fmt.Errorf("back to the run's network: %w", err) // the thread stays locked, and dies
	}
	runtime.UnlockOSThread()
	return c, derr
}

// splice copies both ways until either side ends.
func splice(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	half := func(dst, src net.Conn) {
		defer wg.Done()
		io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	}
	go half(a, b)
	go half(b, a)
	wg.Wait()
}
