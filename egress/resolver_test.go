package egress

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tinehq/tine/egress/egresstest"
	"golang.org/x/net/dns/dnsmessage"
)

func TestResolver(t *testing.T) {
	var mu sync.Mutex
	pins := map[netip.Addr][]uint16{}
	ttls := map[netip.Addr]time.Duration{}
	var refused []Record
	r := &Resolver{
		Policy: Policy{Rules: []Rule{{Host: "api.example.com", Port: 443}, {Host: "*.cdn.example", Port: 0}},
			Upstream: []string{egresstest.Upstream(t, func(string) (string, bool) { return "10.1.2.3", true })}},
		Pin: func(ps ...Pin) error {
			mu.Lock()
			for _, p := range ps {
				pins[p.Addr], ttls[p.Addr] = p.Ports, p.TTL
			}
			mu.Unlock()
			return nil
		},
		Refuse: func(rec Record) { refused = append(refused, rec) },
	}
	rcode := func(name string) dnsmessage.RCode {
		var p dnsmessage.Parser
		h, err := p.Start(r.Answer(query(t, 9, name)))
		if err != nil || h.ID != 9 {
			t.Fatalf("%s: answer %+v, %v", name, h, err)
		}
		return h.RCode
	}
	if got := rcode("API.example.com."); got != dnsmessage.RCodeSuccess {
		t.Errorf("an allowed name: %v", got)
	}
	a := netip.MustParseAddr("10.1.2.3")
	if !slices.Equal(pins[a], []uint16{443}) || ttls[a] != time.Minute || r.NameOf(a) != "api.example.com" {
		t.Errorf("pins %v for %v, name of %s %q", pins, ttls, a, r.NameOf(a))
	}
	if got := rcode("x.cdn.example."); got != dnsmessage.RCodeSuccess || !slices.Equal(pins[a], []uint16{0}) {
		t.Errorf("a wildcard name: %v, pins %v", got, pins)
	}
	for _, name := range []string{"evil.example.", "cdn.example.", "example.com.", "evil.example.", "localname."} {
		if got := rcode(name); got != dnsmessage.RCodeNameError {
			t.Errorf("%s: %v, want NXDOMAIN", name, got)
		}
	}
	if len(refused) != 3 || refused[0].Host != "evil.example" || refused[0].Kind != "dns" {
		t.Errorf("refused = %+v", refused)
	}
}

func TestPinFor(t *testing.T) {
	for ttl, want := range map[time.Duration]time.Duration{
		0: 30 * time.Second, 29 * time.Second: 30 * time.Second, 5 * time.Minute: 5 * time.Minute,
		time.Hour: time.Hour, 48 * time.Hour: time.Hour,
	} {
		if got := pinFor(ttl); got != want {
			t.Errorf("pinFor(%v) = %v, want %v", ttl, got, want)
		}
	}
}

// Over TCP the resolver applies the same policy as over UDP, and gets the
// whole of an answer too long for UDP, even with EDNS (400 addresses, 6 kB):
// every address is pinned for its TTL and handed back, with the TTL capped
// at the longest pin.
func TestResolver_TCP(t *testing.T) {
	var big []string
	for i := range 400 {
		big = append(big, fmt.Sprintf("10.7.%d.%d", i/200, i%200+1))
	}
	var mu sync.Mutex
	pins := map[netip.Addr]time.Duration{}
	var refused []Record
	r := &Resolver{
		Policy: Policy{Rules: []Rule{{Host: "big.example", Port: 443}},
			Upstream: []string{egresstest.Server(t, func(name string) (egresstest.Answer, bool) {
				return egresstest.Answer{Addrs: big, TTL: 7200}, name == "big.example"
			})}},
		Pin: func(ps ...Pin) error {
			mu.Lock()
			for _, p := range ps {
				pins[p.Addr] = p.TTL
			}
			mu.Unlock()
			return nil
		},
		Refuse: func(rec Record) { mu.Lock(); refused = append(refused, rec); mu.Unlock() },
	}
	// Over UDP the answer is too long: truncated, nothing to pin.
	var m dnsmessage.Message
	if err := m.Unpack(r.Answer(query(t, 3, "big.example."))); err != nil || !m.Header.Truncated || len(m.Answers) != 0 {
		t.Fatalf("over UDP: %+v, %v; want a truncated answer", m.Header, err)
	}
	_, addr := serveResolver(t, r, "127.0.0.1:0")
	c, err := net.Dial("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Two queries on one connection.
	m = tcpQuery(t, c, 4, "big.example.")
	if m.Header.ID != 4 || m.Header.RCode != dnsmessage.RCodeSuccess || m.Header.Truncated || len(m.Answers) != len(big) {
		t.Fatalf("over TCP: %+v with %d answers; want all %d", m.Header, len(m.Answers), len(big))
	}
	for _, rr := range m.Answers {
		if rr.Header.TTL != uint32(pinTTLMax/time.Second) {
			t.Errorf("TTL passed on: %d, want it capped at %v", rr.Header.TTL, pinTTLMax)
		}
	}
	mu.Lock()
	if len(pins) != len(big) || pins[netip.MustParseAddr("10.7.1.200")] != 2*time.Hour {
		t.Errorf("pinned over TCP: %d addresses, the last for %v", len(pins), pins[netip.MustParseAddr("10.7.1.200")])
	}
	mu.Unlock()
	for _, ip := range big {
		if name := r.NameOf(netip.MustParseAddr(ip)); name != "big.example" {
			t.Fatalf("the name of %s: %q", ip, name)
		}
	}
	if m := tcpQuery(t, c, 5, "evil.example."); m.Header.ID != 5 || m.Header.RCode != dnsmessage.RCodeNameError {
		t.Errorf("a refused name over TCP: %+v, want NXDOMAIN", m.Header)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(refused) != 1 || refused[0].Host != "evil.example" || refused[0].Kind != "dns" {
		t.Errorf("refused over TCP = %+v", refused)
	}
}

// The names of pinned addresses are forgotten once their pins lapse, and
// never more than nameCap are kept, the soonest to lapse going first.
func TestResolver_NamesBounded(t *testing.T) {
	oldCap, oldGrace := nameCap, nameGrace
	nameCap, nameGrace = 8, 0
	t.Cleanup(func() { nameCap, nameGrace = oldCap, oldGrace })
	shortPins(t, 300*time.Millisecond)
	r := &Resolver{
		Policy: Policy{Rules: []Rule{{Host: "*.example"}}, Upstream: []string{egresstest.Upstream(t, func(name string) (string, bool) {
			var i int
			_, err := fmt.Sscanf(name, "h%d.example", &i)
			return fmt.Sprintf("10.8.%d.%d", i/200, i%200+1), err == nil
		})}},
		Pin: func(...Pin) error { return nil },
	}
	addr := func(i int) netip.Addr { return netip.MustParseAddr(fmt.Sprintf("10.8.%d.%d", i/200, i%200+1)) }
	for i := range 1000 {
		r.Answer(query(t, uint16(i), fmt.Sprintf("h%d.example.", i)))
		if got := r.NameOf(addr(i)); got != fmt.Sprintf("h%d.example", i) {
			t.Fatalf("the name of %s just after its answer: %q", addr(i), got)
		}
		r.mu.Lock()
		n := len(r.names)
		r.mu.Unlock()
		if n > nameCap {
			t.Fatalf("%d names kept after %d answers; want at most %d", n, i+1, nameCap)
		}
	}
	if got := r.NameOf(addr(0)); got != "" {
		t.Errorf("the first name is still kept: %q", got)
	}
	time.Sleep(400 * time.Millisecond)
	if got := r.NameOf(addr(999)); got != "" {
		t.Errorf("the name of %s outlived its pin: %q", addr(999), got)
	}
}

// Queries do not wait for one another: three clients asking at once over
// UDP are all upstream at the same time (the server answers none until it
// has all three).
func TestResolver_Concurrent(t *testing.T) {
	const n = 3
	var mu sync.Mutex
	asked, all := 0, make(chan struct{})
	r := &Resolver{
		Policy: Policy{Rules: []Rule{{Host: "*.example"}}, Upstream: []string{egresstest.Upstream(t, func(name string) (string, bool) {
			mu.Lock()
			if asked++; asked == n {
				close(all)
			}
			mu.Unlock()
			select {
			case <-all:
				return "10.6.0.1", true
			case <-time.After(3 * time.Second):
				return "", false
			}
		})}},
		Pin:     func(...Pin) error { return nil },
		Timeout: 5 * time.Second,
	}
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go r.Serve(pc)
	var wg sync.WaitGroup
	answers := make([]int, n)
	for i := range n {
		wg.Go(func() {
			c, err := net.Dial("udp4", pc.LocalAddr().String())
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(6 * time.Second))
			c.Write(query(t, uint16(i), fmt.Sprintf("h%d.example.", i)))
			buf := make([]byte, 512)
			k, err := c.Read(buf)
			var m dnsmessage.Message
			if err == nil && m.Unpack(buf[:k]) == nil {
				answers[i] = len(m.Answers)
			}
		})
	}
	wg.Wait()
	if !slices.Equal(answers, []int{1, 1, 1}) {
		t.Errorf("answers with an address: %v; want every query upstream at once", answers)
	}
}

// shortPins makes every pin last d for the rest of the test.
func shortPins(t *testing.T, d time.Duration) {
	oldMin, oldMax := pinTTLMin, pinTTLMax
	pinTTLMin, pinTTLMax = d, d
	t.Cleanup(func() { pinTTLMin, pinTTLMax = oldMin, oldMax })
}

// tcpQuery asks for name's A records on c, as DNS over TCP does.
// serveResolver serves r over UDP and TCP at addr (port 0: each a port of
// its own) until the test ends, and returns the two addresses.
func serveResolver(t testing.TB, r *Resolver, addr string) (udp, tcp string) {
	t.Helper()
	pc, err := net.ListenPacket("udp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go r.Serve(pc)
	go r.ServeTCP(ln)
	return pc.LocalAddr().String(), ln.Addr().String()
}

func tcpQuery(t testing.TB, c net.Conn, id uint16, name string) dnsmessage.Message {
	t.Helper()
	q := query(t, id, name)
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(q))), q...)); err != nil {
		t.Fatal(err)
	}
	var n [2]byte
	if _, err := io.ReadFull(c, n[:]); err != nil {
		t.Fatalf("no answer over TCP: %v", err)
	}
	resp := make([]byte, binary.BigEndian.Uint16(n[:]))
	if _, err := io.ReadFull(c, resp); err != nil {
		t.Fatal(err)
	}
	var m dnsmessage.Message
	if err := m.Unpack(resp); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestParseRule(t *testing.T) {
	for in, want := range map[string]Rule{
		"api.anthropic.com:443": {Host: "api.anthropic.com", Port: 443},
		"*.NPMjs.org":           {Host: "*.npmjs.org"},
		"10.0.0.0/8":            {Net: netip.MustParsePrefix("10.0.0.0/8")},
		"10.1.2.3:5432":         {Net: netip.MustParsePrefix("10.1.2.3/32"), Port: 5432},
		"10.1.2.3/16:80":        {Net: netip.MustParsePrefix("10.1.0.0/16"), Port: 80},
	} {
		got, err := ParseRule(in)
		if err != nil || got != want {
			t.Errorf("ParseRule(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "host:0", "host:99999", "::1", "a b", "-x.com", "fe80::/10"} {
		if _, err := ParseRule(bad); err == nil {
			t.Errorf("ParseRule(%q) accepted", bad)
		}
	}
}

func TestNameservers(t *testing.T) {
	got := Nameservers("# c\nnameserver 10.0.0.2\nnameserver ::1\nsearch x\nnameserver 127.0.0.53\n")
	if !slices.Equal(got, []string{"10.0.0.2:53", "127.0.0.53:53"}) {
		t.Errorf("Nameservers = %v", got)
	}
}

func query(t testing.TB, id uint16, name string) []byte {
	t.Helper()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: id, RecursionDesired: true})
	b.StartQuestions()
	b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET})
	q, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// A name an exec's agent is pointed at is refused until Allow adds its
// rule, and answered (and pinned on its port) after; Allow keeps what is
// there once and takes host names only.
func TestResolver_Allow(t *testing.T) {
	var mu sync.Mutex
	pins := map[netip.Addr][]uint16{}
	r := &Resolver{
		Policy: Policy{Rules: []Rule{{Host: "api.example.com", Port: 443}},
			Upstream: []string{egresstest.Upstream(t, func(string) (string, bool) { return "10.1.2.4", true })}},
		Pin: func(ps ...Pin) error {
			mu.Lock()
			defer mu.Unlock()
			for _, p := range ps {
				pins[p.Addr] = p.Ports
			}
			return nil
		},
		Refuse: func(Record) {},
	}
	rcode := func(name string) dnsmessage.RCode {
		var p dnsmessage.Parser
		h, err := p.Start(r.Answer(query(t, 3, name)))
		if err != nil {
			t.Fatal(err)
		}
		return h.RCode
	}
	if got := rcode("gateway.corp.example."); got != dnsmessage.RCodeNameError {
		t.Fatalf("before Allow: %v", got)
	}
	gw := Rule{Host: "gateway.corp.example", Port: 8443}
	if !r.Allow(gw, Rule{Net: netip.MustParsePrefix("10.0.0.0/8")}) || r.Allow(gw) {
		t.Error("Allow did not add the rule once")
	}
	if got := rcode("gateway.corp.example."); got != dnsmessage.RCodeSuccess {
		t.Errorf("after Allow: %v", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := pins[netip.MustParseAddr("10.1.2.4")]; !slices.Equal(got, []uint16{8443}) {
		t.Errorf("pinned on %v, want [8443]", got)
	}
	if p := r.Current(); len(p.Rules) != 2 {
		t.Errorf("the policy in force: %+v (prefixes are not added)", p.Rules)
	}
}
