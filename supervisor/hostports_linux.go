package supervisor

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"strconv"
	"sync"
)

// forwardHostPorts makes each of spec.HostPorts of the host's loopback
// reachable at the run's own 127.0.0.1: a run with a network of its own
// reaches a local model proxy or mock API there as it would on the host,
// and nothing else of the host's loopback. Each connection is dialled from
// the host's network namespace (hn).
func forwardHostPorts(spec Spec, hn *hostNet) error {
	if !spec.Net || len(spec.HostPorts) == 0 {
		return nil
	}
	if hn == nil {
		return fmt.Errorf("forwarding the host's ports: the launcher passed no host network")
	}
	for _, port := range spec.HostPorts {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return fmt.Errorf("the host's port %d in the run: %w", port, err)
		}
		go acceptHost(ln, hn, port)
	}
	return nil
}

func acceptHost(ln net.Listener, hn *hostNet, port int) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			up, err := hn.Dial(context.Background(), "tcp", addr)
			if err != nil {
				log.Printf("host port %d: %v", port, err)
				return
			}
			defer up.Close()
			splice(c, up)
		}()
	}
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
