package netproxy

import (
	"io"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/tinehq/tine/egress"
)

// Proxy is the parent's side of a sandbox's network: the policy it
// enforces and the host ports it forwards.
type Proxy struct {
	policy    egress.Policy
	hostPorts []int
	record    func(egress.Record)
	res       *egress.Resolver

	mu      sync.Mutex
	pins    map[netip.Addr]map[uint16]time.Time // port 0: every port
	refused map[netip.AddrPort]bool
	sock    *os.File // the parent's end of the pair (Pair)
	closers []io.Closer
}

// Setup is what the sandbox's child needs to build its side (Prepare):
// the descriptor of its end of the pair and the host ports to listen on.
type Setup struct {
	FD        int   `json:"fd"`
	HostPorts []int `json:"host_ports,omitempty"`
}

// New returns the proxy of a sandbox held by policy, reaching the host's
// loopback at hostPorts only; record is given each refusal, once.
func New(policy egress.Policy, hostPorts []int, record func(egress.Record)) *Proxy {
	p := &Proxy{policy: policy, hostPorts: slices.Clone(hostPorts), record: record,
		pins: map[netip.Addr]map[uint16]time.Time{}, refused: map[netip.AddrPort]bool{}}
	p.res = &egress.Resolver{Policy: policy, Pin: p.pin, Refuse: p.refuseRecord}
	return p
}

// HostPorts returns the host's loopback ports the sandbox reaches at its
// own 127.0.0.1.
func (p *Proxy) HostPorts() []int { return slices.Clone(p.hostPorts) }

// pin allows each pin's address on its ports for its lifetime (the
// resolver's Pin).
func (p *Proxy) pin(pins ...egress.Pin) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	for _, pin := range pins {
		if p.pins[pin.Addr] == nil {
			p.pins[pin.Addr] = map[uint16]time.Time{}
		}
		until := now.Add(egress.PinLifetime(pin.TTL))
		for _, port := range pin.Ports {
			p.pins[pin.Addr][port] = until
		}
	}
	return nil
}

// allows reports whether a connection to dst may be dialled: its address
// pinned for its port (or every port) and not lapsed, or a prefix rule
// naming it.
func (p *Proxy) allows(dst netip.AddrPort) bool {
	for _, r := range p.policy.Rules {
		if r.Net.IsValid() && r.Net.Contains(dst.Addr()) && (r.Port == 0 || r.Port == dst.Port()) {
			return true
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	ports := p.pins[dst.Addr()]
	for _, port := range []uint16{dst.Port(), 0} {
		if until, ok := ports[port]; ok && now.Before(until) {
			return true
		}
	}
	return false
}

// refuse records the refused connection to dst, once.
func (p *Proxy) refuse(dst netip.AddrPort) {
	p.mu.Lock()
	seen := p.refused[dst]
	p.refused[dst] = true
	p.mu.Unlock()
	if !seen {
		p.refuseRecord(egress.Record{Time: time.Now().UTC(), Kind: "connect", Host: p.res.NameOf(dst.Addr()),
			Addr: dst.Addr().String(), Port: dst.Port(), Proto: "tcp"})
	}
}

func (p *Proxy) refuseRecord(r egress.Record) {
	if p.record != nil {
		p.record(r)
	}
}

// Close stops serving the sandbox's network: its sockets close (the
// connections already spliced end with this process).
func (p *Proxy) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.closers {
		c.Close()
	}
	p.closers = nil
	if p.sock != nil {
		p.sock.Close()
		p.sock = nil
	}
	return nil
}

// keep closes c with the proxy.
func (p *Proxy) keep(c io.Closer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closers = append(p.closers, c)
}
