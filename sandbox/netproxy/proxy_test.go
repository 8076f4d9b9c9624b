package netproxy

import (
	"net/netip"
	"testing"
	"time"

	"github.com/tinehq/tine/egress"
)

// A destination passes when the resolver pinned its address for its port
// (or every port) and the pin has not lapsed, or a prefix rule names it;
// each refused destination is recorded once.
func TestProxy_Allows(t *testing.T) {
	var recs []egress.Record
	p := New(egress.Policy{Rules: []egress.Rule{{Net: netip.MustParsePrefix("203.0.113.0/24"), Port: 8443}}}, nil,
		func(r egress.Record) { recs = append(recs, r) })
	a, b := netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("198.51.100.2")
	p.pin(egress.Pin{Addr: a, Ports: []uint16{443}, TTL: time.Minute}, egress.Pin{Addr: b, Ports: []uint16{0}, TTL: time.Minute})
	for dst, want := range map[string]bool{
		"198.51.100.1:443": true, "198.51.100.1:80": false, "198.51.100.2:22": true,
		"203.0.113.9:8443": true, "203.0.113.9:443": false, "192.0.2.1:443": false,
	} {
		if got := p.allows(netip.MustParseAddrPort(dst)); got != want {
			t.Errorf("allows(%s) = %v, want %v", dst, got, want)
		}
	}
	p.mu.Lock()
	p.pins[a][443] = time.Now().Add(-time.Second) // lapsed
	p.mu.Unlock()
	if p.allows(netip.MustParseAddrPort("198.51.100.1:443")) {
		t.Error("a lapsed pin still allows")
	}
	dst := netip.MustParseAddrPort("192.0.2.1:443")
	p.refuse(dst)
	p.refuse(dst)
	if len(recs) != 1 || recs[0].Kind != "connect" || recs[0].Addr != "192.0.2.1" || recs[0].Port != 443 {
		t.Errorf("records %+v, want one connect to 192.0.2.1:443", recs)
	}
}
