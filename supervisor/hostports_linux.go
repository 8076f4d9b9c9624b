package supervisor

import (
	"context"
	"fmt"
	"log"
	"net"
	"slices"
	"strconv"
	"sync"

	"github.com/tinehq/tine/netns"
)

// hostPorts forwards ports of the host's loopback into a run with a
// network of its own: each is reachable at the run's own 127.0.0.1, as a
// local model proxy or mock API is on the host, and nothing else of the
// host's loopback is. Each connection is dialled from the host's network
// namespace (hn).
type hostPorts struct {
	hn   *hostNet
	mu   sync.Mutex
	open []int
}

// forwardHostPorts forwards spec.HostPorts and returns the forwarder that
// opens more (those an exec's agent is pointed at); nil for a run without
// a network of its own.
func forwardHostPorts(spec Spec, hn *hostNet) (*hostPorts, error) {
	if !spec.Net {
		return nil, nil
	}
	if hn == nil {
		return nil, fmt.Errorf("forwarding the host's ports: the launcher passed no host network")
	}
	h := &hostPorts{hn: hn}
	for _, port := range spec.HostPorts {
		if err := h.forward(port); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// forward makes the host's port reachable in the run, once.
func (h *hostPorts) forward(port int) error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if slices.Contains(h.open, port) {
		return nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("the host's port %d in the run: %w", port, err)
	}
	h.open = append(h.open, port)
	slices.Sort(h.open)
	go acceptHost(ln, h.hn, port)
	return nil
}

// ports lists the forwarded ports, sorted.
func (h *hostPorts) ports() []int {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.open)
}

// acceptHost forwards each connection on ln to the host's port, dialled
// from the host's network.
func acceptHost(ln net.Listener, hn *hostNet, port int) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	err := netns.Forward(context.Background(), ln, func(ctx context.Context) (net.Conn, error) {
		c, err := hn.Dial(ctx, "tcp", addr)
		if err != nil {
			log.Printf("host port %d: %v", port, err)
		}
		return c, err
	})
	if err != nil {
		log.Printf("host port %d: %v", port, err)
	}
}
