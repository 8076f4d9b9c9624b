package egress

import (
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"

	"github.com/tinehq/tine/egress/egresstest"
	"golang.org/x/net/dns/dnsmessage"
)

func TestResolver(t *testing.T) {
	up, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	var mu sync.Mutex
	pins := map[netip.Addr][]uint16{}
	var refused []Record
	r := &Resolver{
		Policy: Policy{Rules: []Rule{{Host: "api.example.com", Port: 443}, {Host: "*.cdn.example", Port: 0}},
			Upstream: []string{egresstest.Upstream(t, func(string) (string, bool) { return "10.1.2.3", true })}},
		Up:     up,
		Pin:    func(a netip.Addr, ports []uint16) error { mu.Lock(); pins[a] = ports; mu.Unlock(); return nil },
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
	if !slices.Equal(pins[a], []uint16{443}) || r.NameOf(a) != "api.example.com" {
		t.Errorf("pins %v, name of %s %q", pins, a, r.NameOf(a))
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

func query(t *testing.T, id uint16, name string) []byte {
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
