package netproxy

import (
	"errors"
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
	rules   pinner // the child's table (egress.InstallProxy), once Start has it
	refused map[netip.AddrPort]bool
	sock    *os.File // the parent's end of the pair (Pair)
	closers []io.Closer
	stop    chan struct{} // closed by Close: the refusal watcher ends
	watched chan struct{} // closed by the watcher once it has ended
}

// ErrEnded is Start's error when the child ended before it said anything
// about its network: it failed before building it, and said why itself.
var ErrEnded = errors.New("the sandbox ended before building its network")

// pinner is where the resolver's pins go: the child's rules
// (egress.Rules, Linux only).
type pinner interface{ Pin(...egress.Pin) error }

// Setup is what the sandbox's child needs to build its side (Prepare):
// the descriptor of its end of the pair, the host ports to listen on and
// the policy's prefix rules (the names' addresses come as they are pinned).
type Setup struct {
	FD        int           `json:"fd"`
	HostPorts []int         `json:"host_ports,omitempty"`
	Prefixes  []egress.Rule `json:"prefixes,omitempty"`
}

// New returns the proxy of a sandbox held by policy, reaching the host's
// loopback at hostPorts only; record is given each refusal, once.
func New(policy egress.Policy, hostPorts []int, record func(egress.Record)) *Proxy {
	p := &Proxy{policy: policy, hostPorts: slices.Clone(hostPorts), record: record,
		refused: map[netip.AddrPort]bool{}}
	p.res = &egress.Resolver{Policy: policy, Pin: p.pin, Refuse: p.refuseRecord}
	return p
}

// Setup returns what the child needs to build its side, its end of the
// pair at descriptor fd.
func (p *Proxy) Setup(fd int) Setup {
	s := Setup{FD: fd, HostPorts: slices.Clone(p.hostPorts)}
	for _, r := range p.policy.Rules {
		if r.Net.IsValid() {
			s.Prefixes = append(s.Prefixes, r)
		}
	}
	return s
}

// Policy returns the policy the proxy enforces.
func (p *Proxy) Policy() egress.Policy { return p.res.Current() }

// HostPorts are the ports of the host's loopback the command reaches at its
// own 127.0.0.1.
func (p *Proxy) HostPorts() []int { return slices.Clone(p.hostPorts) }

// pin allows the pins' addresses on their ports in the child's rules
// (the resolver's Pin), for as long as egress.Rules.Pin does.
func (p *Proxy) pin(pins ...egress.Pin) error {
	p.mu.Lock()
	rules := p.rules
	p.mu.Unlock()
	if rules == nil {
		return errors.New("the sandbox's network is not up")
	}
	return rules.Pin(pins...)
}

// allows reports whether a connection the child's rules sent to the proxy
// may be dialled, checked again here, where the command cannot reach: a
// prefix rule names it, or an allowed name resolved to its address and
// the rules allow that name on its port. The names are the resolver's
// (egress.Resolver.NameOf): kept for an answer's TTL and a grace, and for
// a bounded number of addresses, so they never grow without end, and an
// address the rules still pin is still known here.
func (p *Proxy) allows(dst netip.AddrPort) bool {
	for _, r := range p.policy.Rules {
		if r.Net.IsValid() && r.Net.Contains(dst.Addr()) && (r.Port == 0 || r.Port == dst.Port()) {
			return true
		}
	}
	name := p.res.NameOf(dst.Addr())
	if name == "" {
		return false
	}
	ports, ok := p.policy.Ports(name)
	return ok && (slices.Contains(ports, 0) || slices.Contains(ports, dst.Port()))
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

// Close stops serving the sandbox's network, once the refusals the child's
// rules made last are recorded: its sockets close (the connections already
// spliced end with this process).
func (p *Proxy) Close() error {
	p.mu.Lock()
	stop, watched := p.stop, p.watched
	p.stop = nil
	p.mu.Unlock()
	if stop != nil {
		close(stop)
		<-watched
	}
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
