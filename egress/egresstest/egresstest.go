// Package egresstest is a name server for tests of egress: it answers A
// queries from a lookup function, on the host's loopback.
package egresstest

import (
	"net"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// Upstream serves A queries on 127.0.0.1: a name lookup knows (asked at each
// query, without its final dot) gets its IPv4 address, anything else an
// answer without records. It returns the server's address; the test's end
// closes it.
func Upstream(t testing.TB, lookup func(name string) (string, bool)) string {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if out := answer(buf[:n], lookup); out != nil {
				pc.WriteTo(out, from)
			}
		}
	}()
	return pc.LocalAddr().String()
}

func answer(q []byte, lookup func(string) (string, bool)) []byte {
	var p dnsmessage.Parser
	h, err := p.Start(q)
	if err != nil {
		return nil
	}
	question, err := p.Question()
	if err != nil {
		return nil
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, RecursionAvailable: true})
	b.StartQuestions()
	b.Question(question)
	b.StartAnswers()
	if ip, ok := lookup(strings.TrimSuffix(question.Name.String(), ".")); ok && question.Type == dnsmessage.TypeA {
		if a := net.ParseIP(ip).To4(); a != nil {
			b.AResource(dnsmessage.ResourceHeader{Name: question.Name, Class: dnsmessage.ClassINET, TTL: 60},
				dnsmessage.AResource{A: [4]byte(a)})
		}
	}
	out, _ := b.Finish()
	return out
}
