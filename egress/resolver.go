package egress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log"
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
// allowed one is asked upstream, through a socket of the host's network,
// and every IPv4 address in the answer is pinned for the ports its rules
// allow, for as long as the answer says (clamped by pinFor), before the
// answer goes back, so the connection that follows passes the run's rules.
// The TTLs in the answer are capped at the longest pin, so a client never
// keeps an address longer than the rules allow it.
type Resolver struct {
	Policy  Policy
	Up      net.PacketConn                                  // the socket upstream queries go out on
	Pin     func(netip.Addr, []uint16, time.Duration) error // allow addr on ports (0: any) for a TTL
	Refuse  func(Record)                                    // a refused name
	Timeout time.Duration                                   // per upstream server; default 2 s

	askMu   sync.Mutex // one upstream query at a time on Up
	mu      sync.Mutex
	names   map[netip.Addr]string // pinned address → the name it answered
	refused map[string]bool       // names refused (and recorded) so far
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

// tcpIdle is how long a TCP connection to the resolver may wait for its
// next query.
const tcpIdle = 10 * time.Second

// ednsSize is the UDP payload size a query asked over TCP advertises
// upstream, so that the answer the client could not get over UDP comes
// whole (the upstream socket is UDP).
const ednsSize = 4096

// NameOf returns the allowed name that resolved to a, if any.
func (r *Resolver) NameOf(a netip.Addr) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.names[a]
}

// Serve answers the queries arriving on pc, one at a time, until pc is
// closed.
func (r *Resolver) Serve(pc net.PacketConn) error {
	buf := make([]byte, 4096)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		if resp := r.Answer(buf[:n]); resp != nil {
			pc.WriteTo(resp, from)
		}
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
		var n [2]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		q := make([]byte, binary.BigEndian.Uint16(n[:]))
		if _, err := io.ReadFull(c, q); err != nil {
			return
		}
		resp := r.answer(q, true)
		if resp == nil {
			return
		}
		c.SetWriteDeadline(time.Now().Add(tcpIdle))
		if _, err := c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(resp))), resp...)); err != nil {
			return
		}
	}
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
	ports, ok := r.Policy.Ports(name)
	if !ok {
		r.refuse(name)
		return reply(h, &question, dnsmessage.RCodeNameError)
	}
	up, added := q, false
	if overTCP {
		up, added = withEDNS(q)
	}
	resp, err := r.ask(up, h.ID)
	if err != nil {
		log.Printf("egress: asking upstream for %s: %v", name, err)
		return reply(h, &question, dnsmessage.RCodeServerFailure)
	}
	resp, err = r.pinAnswer(resp, name, ports, added)
	if err != nil {
		log.Printf("egress: pinning %s: %v", name, err)
		return reply(h, &question, dnsmessage.RCodeServerFailure)
	}
	return resp
}

// withEDNS returns q advertising a UDP payload of at least ednsSize, and
// whether it added the OPT record for it (the answer's is then not the
// client's to see). A query it cannot read is returned as it is.
func withEDNS(q []byte) ([]byte, bool) {
	var m dnsmessage.Message
	if m.Unpack(q) != nil {
		return q, false
	}
	added := true
	for i := range m.Additionals {
		if h := &m.Additionals[i].Header; h.Type == dnsmessage.TypeOPT {
			h.Class = max(h.Class, ednsSize)
			added = false
		}
	}
	if added {
		var h dnsmessage.ResourceHeader
		if h.SetEDNS0(ednsSize, dnsmessage.RCodeSuccess, false) != nil {
			return q, false
		}
		m.Additionals = append(m.Additionals, dnsmessage.Resource{Header: h, Body: &dnsmessage.OPTResource{}})
	}
	out, err := m.Pack()
	if err != nil {
		return q, false
	}
	return out, added
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
// and returns the answer to pass on: its TTLs capped at pinTTLMax and,
// when stripOPT, without the OPT record the client did not ask for.
func (r *Resolver) pinAnswer(resp []byte, name string, ports []uint16, stripOPT bool) ([]byte, error) {
	var m dnsmessage.Message
	if err := m.Unpack(resp); err != nil {
		return nil, err
	}
	for _, rr := range m.Answers {
		a, ok := rr.Body.(*dnsmessage.AResource)
		if !ok {
			continue
		}
		addr := netip.AddrFrom4(a.A)
		if err := r.Pin(addr, ports, time.Duration(rr.Header.TTL)*time.Second); err != nil {
			return nil, err
		}
		r.mu.Lock()
		if r.names == nil {
			r.names = map[netip.Addr]string{}
		}
		r.names[addr] = name
		r.mu.Unlock()
	}
	maxTTL := uint32(pinTTLMax / time.Second)
	for _, section := range [][]dnsmessage.Resource{m.Answers, m.Authorities, m.Additionals} {
		for i := range section {
			if h := &section[i].Header; h.Type != dnsmessage.TypeOPT {
				h.TTL = min(h.TTL, maxTTL)
			}
		}
	}
	if stripOPT {
		m.Additionals = slices.DeleteFunc(m.Additionals, func(rr dnsmessage.Resource) bool { return rr.Header.Type == dnsmessage.TypeOPT })
	}
	return m.Pack()
}

// ask sends q to each upstream server in turn and returns the first
// answer whose id is id.
func (r *Resolver) ask(q []byte, id uint16) ([]byte, error) {
	r.askMu.Lock()
	defer r.askMu.Unlock()
	timeout := r.Timeout
	if timeout == 0 {
		timeout = 2 * time.Second
	}
	var errs []error
	buf := make([]byte, 65535)
	for _, server := range r.Policy.Upstream {
		to, err := net.ResolveUDPAddr("udp4", server)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := r.Up.WriteTo(q, to); err != nil {
			errs = append(errs, err)
			continue
		}
		deadline := time.Now().Add(timeout)
		r.Up.SetReadDeadline(deadline)
		for {
			n, from, err := r.Up.ReadFrom(buf)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", server, err))
				break
			}
			if from.String() == to.String() && n >= 2 && uint16(buf[0])<<8|uint16(buf[1]) == id {
				return append([]byte(nil), buf[:n]...), nil
			}
		}
	}
	if len(errs) == 0 {
		return nil, errors.New("no upstream name server")
	}
	return nil, errors.Join(errs...)
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
