package egress

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// Resolver answers a run's DNS queries, over UDP (Serve) and TCP
// (ServeTCP) alike: a name no rule allows gets NXDOMAIN (and a Record); an
// allowed one is asked upstream, from the host's network, over the
// transport the client used (so an answer too long for UDP comes whole
// over TCP), and every IPv4 address in the answer is pinned for the ports
// its rules allow, for as long as the answer says (clamped by pinFor),
// before the answer goes back, so the connection that follows passes the
// run's rules. The TTLs in the answer are capped at the longest pin, so a
// client never keeps an address longer than the rules allow it. Each
// upstream query has a connection of its own, so queries do not wait for
// one another.
type Resolver struct {
	Policy Policy
	// Dial connects to an upstream server ("udp4" or "tcp4"), from the
	// host's network: the run's own rules would refuse it. nil dials from
	// this network (tests).
	Dial    func(ctx context.Context, network, address string) (net.Conn, error)
	Pin     func(...Pin) error // allow the addresses of an answer, at once
	Refuse  func(Record)       // a refused name
	Timeout time.Duration      // per upstream server; default 2 s

	mu      sync.Mutex
	names   map[netip.Addr]named // pinned address → the name it answered
	refused map[string]bool      // names refused (and recorded) so far
}

// Pin is an address an answer named, to be allowed on Ports (0: every
// port) for TTL, that of its record (clamped by pinFor).
type Pin struct {
	Addr  netip.Addr
	Ports []uint16
	TTL   time.Duration
}

// named is the name an address answered, until when NameOf tells it.
type named struct {
	name  string
	until time.Time
}

// The range a pin's lifetime is clamped to. At least pinTTLMin, so that a
// connection can still begin after an answer with a TTL of 0 or 1 (common
// behind load balancers); at most pinTTLMax, so an address an allowed name
// has left does not stay open for a day because its record said so. The
// tests shorten them.
var pinTTLMin, pinTTLMax = 30 * time.Second, time.Hour

// pinFor is how long an address from an answer with ttl stays pinned.
func pinFor(ttl time.Duration) time.Duration {
	return min(max(ttl, pinTTLMin), pinTTLMax)
}

// Allow adds host-name rules to the policy (an agent an exec points at an
// API of its own); other rules, and those already there, are left out.
// It reports whether it added any.
func (r *Resolver) Allow(rules ...Rule) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	added := false
	for _, rule := range rules {
		if rule.Host != "" && !slices.Contains(r.Policy.Rules, rule) {
			r.Policy.Rules = append(slices.Clip(r.Policy.Rules), rule)
			added = true
		}
	}
	return added
}

// ports is Policy.Ports, under the lock Allow takes.
func (r *Resolver) ports(name string) ([]uint16, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Policy.Ports(name)
}

// Current returns a copy of the policy in force.
func (r *Resolver) Current() Policy {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.Policy
	p.Rules = slices.Clone(p.Rules)
	return p
}

// tcpIdle is how long a TCP connection to the resolver may wait for its
// next query.
const tcpIdle = 10 * time.Second

// An address's name is kept for nameGrace after its pin lapses, so that a
// connection a client opens a little late (from a cache that outlived the
// answer's TTL) is still recorded with it; and for nameCap addresses at
// most, the soonest to lapse going first. The tests change them.
var (
	nameGrace = 10 * time.Minute
	nameCap   = 4096
)

// NameOf returns the allowed name that resolved to a, if its pin has not
// lapsed more than nameGrace ago.
func (r *Resolver) NameOf(a netip.Addr) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n, ok := r.names[a]; ok && time.Now().Before(n.until) {
		return n.name
	}
	return ""
}

// remember keeps name as a's, which is pinned for pin from now.
func (r *Resolver) remember(a netip.Addr, name string, pin time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.names == nil {
		r.names = map[netip.Addr]named{}
	}
	now := time.Now()
	r.names[a] = named{name, now.Add(pin + nameGrace)}
	if len(r.names) > nameCap {
		r.evictNames(now)
	}
}

// evictNames drops the names that have lapsed and, if that is not enough,
// the soonest to lapse, down to three quarters of nameCap: a sort every
// quarter of nameCap new addresses at most. r.mu is held.
func (r *Resolver) evictNames(now time.Time) {
	maps.DeleteFunc(r.names, func(_ netip.Addr, n named) bool { return !now.Before(n.until) })
	keep := nameCap * 3 / 4
	if len(r.names) <= keep {
		return
	}
	addrs := slices.Collect(maps.Keys(r.names))
	slices.SortFunc(addrs, func(a, b netip.Addr) int { return r.names[a].until.Compare(r.names[b].until) })
	for _, a := range addrs[:len(addrs)-keep] {
		delete(r.names, a)
	}
}

// inFlight is how many UDP queries Serve answers at once; past that, it
// reads no more until one is answered (and the kernel drops what a flood
// sends beyond its buffer).
const inFlight = 64

// Serve answers the queries arriving on pc, up to inFlight at once, until
// pc is closed.
func (r *Resolver) Serve(pc net.PacketConn) error {
	busy := make(chan struct{}, inFlight)
	buf := make([]byte, 4096)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		q := append([]byte(nil), buf[:n]...)
		busy <- struct{}{}
		go func() {
			defer func() { <-busy }()
			if resp := r.Answer(q); resp != nil {
				pc.WriteTo(resp, from)
			}
		}()
	}
}

// ServeTCP answers the queries of each connection accepted on ln
// (messages prefixed by their length, RFC 1035 4.2.2; several per
// connection) until ln is closed. A connection ends when its client
// closes it, sends something that is not a query, or is idle for tcpIdle.
func (r *Resolver) ServeTCP(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		go r.serveConn(c)
	}
}

func (r *Resolver) serveConn(c net.Conn) {
	defer c.Close()
	for {
		c.SetReadDeadline(time.Now().Add(tcpIdle))
		q, err := readMsg(c)
		if err != nil {
			return
		}
		resp := r.answer(q, true)
		if resp == nil {
			return
		}
		c.SetWriteDeadline(time.Now().Add(tcpIdle))
		if writeMsg(c, resp) != nil {
			return
		}
	}
}

// readMsg reads one DNS message over TCP: its length, then itself.
func readMsg(c io.Reader) ([]byte, error) {
	var n [2]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		return nil, err
	}
	m := make([]byte, binary.BigEndian.Uint16(n[:]))
	if _, err := io.ReadFull(c, m); err != nil {
		return nil, err
	}
	return m, nil
}

// writeMsg writes the DNS message m over TCP, prefixed by its length.
func writeMsg(c io.Writer, m []byte) error {
	_, err := c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(m))), m...))
	return err
}

// Answer returns the reply to the query q, asked over UDP, or nil for one
// not worth answering (not a query at all).
func (r *Resolver) Answer(q []byte) []byte { return r.answer(q, false) }

// answer is Answer for a query asked over UDP or, overTCP, TCP, whose
// answer may be as long as it needs.
func (r *Resolver) answer(q []byte, overTCP bool) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(q)
	if err != nil || h.Response {
		return nil
	}
	question, err := p.Question()
	if err != nil {
		return reply(h, nil, dnsmessage.RCodeFormatError)
	}
	name := strings.TrimSuffix(strings.ToLower(question.Name.String()), ".")
	ports, ok := r.ports(name)
	if !ok {
		r.refuse(name)
		return reply(h, &question, dnsmessage.RCodeNameError)
	}
	resp, err := r.ask(q, h.ID, overTCP)
	if err != nil {
		log.Printf("egress: asking upstream for %s: %v", name, err)
		return reply(h, &question, dnsmessage.RCodeServerFailure)
	}
	resp, err = r.pinAnswer(resp, name, ports)
	if err != nil {
		log.Printf("egress: pinning %s: %v", name, err)
		return reply(h, &question, dnsmessage.RCodeServerFailure)
	}
	return resp
}

// refuse records the refusal of name, once. A name of one label (the
// run's own host name, a search-list candidate) leaves no record: it names
// nothing outside by itself.
func (r *Resolver) refuse(name string) {
	if r.Refuse == nil || !strings.Contains(name, ".") {
		return
	}
	r.mu.Lock()
	seen := r.refused[name]
	if r.refused == nil {
		r.refused = map[string]bool{}
	}
	r.refused[name] = true
	r.mu.Unlock()
	if !seen {
		r.Refuse(Record{Time: time.Now().UTC(), Kind: "dns", Host: name})
	}
}

// pinAnswer pins every A record of the upstream answer resp for its TTL
// and returns the answer to pass on, its TTLs capped at pinTTLMax.
func (r *Resolver) pinAnswer(resp []byte, name string, ports []uint16) ([]byte, error) {
	var m dnsmessage.Message
	if err := m.Unpack(resp); err != nil {
		return nil, err
	}
	var pins []Pin
	for _, rr := range m.Answers {
		if a, ok := rr.Body.(*dnsmessage.AResource); ok {
			pins = append(pins, Pin{netip.AddrFrom4(a.A), ports, time.Duration(rr.Header.TTL) * time.Second})
		}
	}
	if len(pins) > 0 {
		if err := r.Pin(pins...); err != nil {
			return nil, err
		}
	}
	for _, p := range pins {
		r.remember(p.Addr, name, pinFor(p.TTL))
	}
	maxTTL := uint32(pinTTLMax / time.Second)
	for _, section := range [][]dnsmessage.Resource{m.Answers, m.Authorities, m.Additionals} {
		for i := range section {
			if h := &section[i].Header; h.Type != dnsmessage.TypeOPT {
				h.TTL = min(h.TTL, maxTTL)
			}
		}
	}
	return m.Pack()
}

// ask sends q to each upstream server in turn, over TCP or UDP, and
// returns the first answer whose id is id.
func (r *Resolver) ask(q []byte, id uint16, overTCP bool) ([]byte, error) {
	var errs []error
	for _, server := range r.Policy.Upstream {
		resp, err := r.askOne(server, q, id, overTCP)
		if err == nil {
			return resp, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", server, err))
	}
	if len(errs) == 0 {
		return nil, errors.New("no upstream name server")
	}
	return nil, errors.Join(errs...)
}

// askOne asks server q on a connection of its own, within r.Timeout.
func (r *Resolver) askOne(server string, q []byte, id uint16, overTCP bool) ([]byte, error) {
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	dial, network := r.Dial, "udp4"
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	if overTCP {
		network = "tcp4"
	}
	c, err := dial(ctx, network, server)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	deadline, _ := ctx.Deadline()
	c.SetDeadline(deadline)
	if overTCP {
		if err := writeMsg(c, q); err != nil {
			return nil, err
		}
		resp, err := readMsg(c)
		if err == nil && !hasID(resp, id) {
			err = errors.New("an answer to another query")
		}
		return resp, err
	}
	if _, err := c.Write(q); err != nil {
		return nil, err
	}
	bp := datagrams.Get().(*[]byte)
	defer datagrams.Put(bp)
	buf := *bp
	for { // the socket is connected: only the server's datagrams arrive
		n, err := c.Read(buf)
		if err != nil {
			return nil, err
		}
		if hasID(buf[:n], id) {
			return append([]byte(nil), buf[:n]...), nil
		}
	}
}

// datagrams are the buffers upstream UDP answers are read into: one of
// the largest a datagram can be per query in flight, reused, rather than
// 64 KiB allocated for each query.
var datagrams = sync.Pool{New: func() any { b := make([]byte, 65535); return &b }}

// hasID reports whether the message m has the id id.
func hasID(m []byte, id uint16) bool {
	return len(m) >= 2 && binary.BigEndian.Uint16(m) == id
}

// reply builds an answer without records to the query with header h.
func reply(h dnsmessage.Header, q *dnsmessage.Question, rcode dnsmessage.RCode) []byte {
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, OpCode: h.OpCode,
		RecursionDesired: h.RecursionDesired, RecursionAvailable: true, RCode: rcode})
	if q != nil {
		b.StartQuestions()
		b.Question(*q)
	}
	out, err := b.Finish()
	if err != nil {
		return nil
	}
	return out
}
