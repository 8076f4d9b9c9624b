package egress

import (
	"errors"
	"fmt"
	"log"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// Resolver answers a run's DNS queries: a name no rule allows gets
// NXDOMAIN (and a Record); an allowed one is asked upstream, through a
// socket of the host's network, and every IPv4 address in the answer is
// pinned for the ports its rules allow before the answer goes back, so the
// connection that follows passes the run's rules.
type Resolver struct {
	Policy  Policy
	Up      net.PacketConn                   // the socket upstream queries go out on
	Pin     func(netip.Addr, []uint16) error // allow addr on ports (0: any)
	Refuse  func(Record)                     // a refused name
	Timeout time.Duration                    // per upstream server; default 2 s

	mu      sync.Mutex
	names   map[netip.Addr]string // pinned address → the name it answered
	refused map[string]bool       // names refused (and recorded) so far
}

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

// Answer returns the reply to the query q, or nil for one not worth
// answering (not a query at all).
func (r *Resolver) Answer(q []byte) []byte {
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
	resp, err := r.ask(q, h.ID)
	if err != nil {
		log.Printf("egress: asking upstream for %s: %v", name, err)
		return reply(h, &question, dnsmessage.RCodeServerFailure)
	}
	if err := r.pinAnswer(resp, name, ports); err != nil {
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

// pinAnswer pins every A record of the upstream answer resp.
func (r *Resolver) pinAnswer(resp []byte, name string, ports []uint16) error {
	var p dnsmessage.Parser
	if _, err := p.Start(resp); err != nil {
		return err
	}
	if err := p.SkipAllQuestions(); err != nil {
		return err
	}
	for {
		rh, err := p.AnswerHeader()
		if errors.Is(err, dnsmessage.ErrSectionDone) {
			return nil
		}
		if err != nil {
			return err
		}
		if rh.Type != dnsmessage.TypeA {
			if err := p.SkipAnswer(); err != nil {
				return err
			}
			continue
		}
		a, err := p.AResource()
		if err != nil {
			return err
		}
		addr := netip.AddrFrom4(a.A)
		if err := r.Pin(addr, ports); err != nil {
			return err
		}
		r.mu.Lock()
		if r.names == nil {
			r.names = map[netip.Addr]string{}
		}
		r.names[addr] = name
		r.mu.Unlock()
	}
}

// ask sends q to each upstream server in turn and returns the first
// answer whose id is id.
func (r *Resolver) ask(q []byte, id uint16) ([]byte, error) {
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
