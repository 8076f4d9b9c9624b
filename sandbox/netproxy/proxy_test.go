package netproxy

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/tinehq/tine/egress"
	"github.com/tinehq/tine/egress/egresstest"
	"golang.org/x/net/dns/dnsmessage"
)

// query is an A query for name, with room for an answer of any size.
func query(t *testing.T, id uint16, name string) []byte {
	t.Helper()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: id, RecursionDesired: true})
	b.StartQuestions()
	b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name + "."), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET})
	b.StartAdditionals()
	var opt dnsmessage.ResourceHeader
	opt.SetEDNS0(65535, dnsmessage.RCodeSuccess, false)
	b.OPTResource(opt, dnsmessage.OPTResource{})
	q, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// proxyOf is a proxy held by rules whose resolver asks a server answering
// answers, and pins nowhere (no child's rules here).
func proxyOf(t *testing.T, rules []egress.Rule, answers map[string]egresstest.Answer, record func(egress.Record)) *Proxy {
	t.Helper()
	up := egresstest.Server(t, func(name string) (egresstest.Answer, bool) { a, ok := answers[name]; return a, ok })
	p := New(egress.Policy{Rules: rules, Upstream: []string{up}}, nil, record)
	p.res.Pin = func(...egress.Pin) error { return nil }
	return p
}

// A connection the child's rules sent to the proxy passes when a prefix
// rule names it or an allowed name resolved to its address and the rules
// allow the name on its port; each refused destination is recorded once.
func TestProxy_Allows(t *testing.T) {
	var recs []egress.Record
	p := proxyOf(t, []egress.Rule{{Net: netip.MustParsePrefix("203.0.113.0/24"), Port: 8443},
		{Host: "a.test", Port: 443}, {Host: "b.test"}},
		map[string]egresstest.Answer{"a.test": {Addrs: []string{"198.51.100.1"}, TTL: 60}, "b.test": {Addrs: []string{"198.51.100.2"}, TTL: 60}},
		func(r egress.Record) { recs = append(recs, r) })
	for i, name := range []string{"a.test", "b.test"} {
		if p.res.Answer(query(t, uint16(i+1), name)) == nil {
			t.Fatalf("no answer for %s", name)
		}
	}
	for dst, want := range map[string]bool{
		"198.51.100.1:443": true, "198.51.100.1:80": false, "198.51.100.2:22": true, "198.51.100.3:443": false,
		"203.0.113.9:8443": true, "203.0.113.9:443": false, "192.0.2.1:443": false,
	} {
		if got := p.allows(netip.MustParseAddrPort(dst)); got != want {
			t.Errorf("allows(%s) = %v, want %v", dst, got, want)
		}
	}
	dst := netip.MustParseAddrPort("192.0.2.1:443")
	p.refuse(dst)
	p.refuse(dst)
	if len(recs) != 1 || recs[0].Kind != "connect" || recs[0].Addr != "192.0.2.1" || recs[0].Port != 443 {
		t.Errorf("records %+v, want one connect to 192.0.2.1:443", recs)
	}
}

// What the proxy allows by name is bounded as the resolver's names are:
// past their cap, the address soonest to lapse is forgotten, and no
// longer allowed. (The proxy kept a map of pins of its own, which only
// grew during one tine exec: the short-lived address stayed allowed.)
func TestProxy_AllowsBounded(t *testing.T) {
	answers := map[string]egresstest.Answer{"short.test": {Addrs: []string{"198.51.100.1"}, TTL: 1}}
	var names []string
	for i := range 5 {
		name := fmt.Sprintf("big%d.test", i)
		var a egresstest.Answer
		for j := range 900 {
			a.Addrs = append(a.Addrs, fmt.Sprintf("10.%d.%d.%d", i, j/250, j%250+1))
		}
		a.TTL = 3600
		answers[name], names = a, append(names, name)
	}
	p := proxyOf(t, []egress.Rule{{Host: "*.test", Port: 443}}, answers, nil)
	short := netip.MustParseAddrPort("198.51.100.1:443")
	for i, name := range append([]string{"short.test"}, names...) {
		if r := p.res.Answer(query(t, uint16(i+1), name)); r == nil || strings.Count(string(r), "\x00\x01\x00\x01") == 0 {
			t.Fatalf("no answer for %s", name)
		}
		if i == 0 && !p.allows(short) {
			t.Fatal("the answered address is not allowed")
		}
	}
	if p.allows(short) {
		t.Error("after 4500 more addresses, the one soonest to lapse is still allowed")
	}
	if !p.allows(netip.MustParseAddrPort("10.4.3.150:443")) {
		t.Error("the latest address is not allowed")
	}
}
