package egress

import (
	"fmt"
	"net"
	"testing"

	"github.com/tinehq/tine/egress/egresstest"
	"golang.org/x/net/dns/dnsmessage"
)

// BenchmarkResolver measures one answer of the resolver to a client on
// loopback, with a loopback upstream (Dial nil: no namespace switch; pins
// cost nothing here), over UDP and over TCP (one client connection for
// every query; the resolver dials upstream over TCP for each), for an
// answer of one address and one of 400 (which only TCP gets whole).
//
//	go test ./egress -run '^$' -bench Resolver -count 5
func BenchmarkResolver(b *testing.B) {
	for _, n := range []int{1, 400} {
		var addrs []string
		for i := range n {
			addrs = append(addrs, fmt.Sprintf("10.7.%d.%d", i/200, i%200+1))
		}
		r := &Resolver{
			Policy: Policy{Rules: []Rule{{Host: "a.example", Port: 443}}, Upstream: []string{egresstest.Server(b, func(string) (egresstest.Answer, bool) {
				return egresstest.Answer{Addrs: addrs, TTL: 60}, true
			})}},
			Pin: func(...Pin) error { return nil },
		}
		udp, tcp := serveResolver(b, r, "127.0.0.1:0")
		q := query(b, 1, "a.example.")
		b.Run(fmt.Sprintf("udp/%d", n), func(b *testing.B) {
			c, err := net.Dial("udp4", udp)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			buf := make([]byte, 65535)
			for b.Loop() {
				c.Write(q)
				if _, err := c.Read(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("tcp/%d", n), func(b *testing.B) {
			c, err := net.Dial("tcp4", tcp)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			for b.Loop() {
				if m := tcpQuery(b, c, 1, "a.example."); len(m.Answers) != n || m.Header.RCode != dnsmessage.RCodeSuccess {
					b.Fatalf("%d answers, %v", len(m.Answers), m.Header.RCode)
				}
			}
		})
	}
}
