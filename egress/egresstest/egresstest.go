// Package egresstest is a name server for tests of egress: it answers A
// queries from a lookup function, on the host's loopback.
package egresstest

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// Answer is what Server replies for a name: its IPv4 addresses, each with
// TTL (seconds).
type Answer struct {
	Addrs []string
	TTL   uint32
}

// Upstream serves A queries on 127.0.0.1: a name lookup knows (asked at each
// query, without its final dot) gets its IPv4 address, anything else an
// answer without records. It returns the server's address; the test's end
// closes it.
func Upstream(t testing.TB, lookup func(name string) (string, bool)) string {
	return Server(t, func(name string) (Answer, bool) {
		ip, ok := lookup(name)
		return Answer{Addrs: []string{ip}, TTL: 60}, ok
	})
}

// Server is Upstream with answers of any size and TTL, over UDP and, on
// the same port, TCP. Like a real server over UDP, it sends an answer
// longer than the query allows (512 bytes, or the payload size of its EDNS
// record) truncated: the header alone, with the TC bit; over TCP an answer
// is whole. Queries are answered concurrently: lookup may block.
func Server(t testing.TB, lookup func(name string) (Answer, bool)) string {
	t.Helper()
	pc, ln := listenBoth(t)
	t.Cleanup(func() { pc.Close(); ln.Close() })
	go func() {
		buf := make([]byte, 65535)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q := append([]byte(nil), buf[:n]...)
			go func() { // several at once, as a real server
				if out := answer(q, lookup, false); out != nil {
					pc.WriteTo(out, from)
				}
			}()
		}
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serveTCP(c, lookup)
		}
	}()
	return pc.LocalAddr().String()
}

// listenBoth listens on one port of 127.0.0.1 over UDP and TCP.
func listenBoth(t testing.TB) (net.PacketConn, net.Listener) {
	for range 20 {
		pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp4", pc.LocalAddr().String())
		if err == nil {
			return pc, ln
		}
		pc.Close() // the port is taken over TCP: another one
	}
	t.Fatal("no port of 127.0.0.1 free over both UDP and TCP")
	return nil, nil
}

// serveTCP answers the queries of c, each prefixed by its length.
func serveTCP(c net.Conn, lookup func(string) (Answer, bool)) {
	defer c.Close()
	for {
		var n [2]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		q := make([]byte, binary.BigEndian.Uint16(n[:]))
		if _, err := io.ReadFull(c, q); err != nil {
			return
		}
		out := answer(q, lookup, true)
		if out == nil {
			return
		}
		if _, err := c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(out))), out...)); err != nil {
			return
		}
	}
}

func answer(q []byte, lookup func(string) (Answer, bool), overTCP bool) []byte {
	var m dnsmessage.Message
	if m.Unpack(q) != nil || len(m.Questions) == 0 {
		return nil
	}
	limit := 512
	if overTCP {
		limit = 65535
	}
	for _, rr := range m.Additionals {
		if rr.Header.Type == dnsmessage.TypeOPT {
			limit = max(limit, int(rr.Header.Class))
		}
	}
	question := m.Questions[0]
	h := dnsmessage.Header{ID: m.Header.ID, Response: true, RecursionAvailable: true}
	b := dnsmessage.NewBuilder(nil, h)
	b.EnableCompression()
	b.StartQuestions()
	b.Question(question)
	b.StartAnswers()
	if ans, ok := lookup(strings.TrimSuffix(question.Name.String(), ".")); ok && question.Type == dnsmessage.TypeA {
		for _, ip := range ans.Addrs {
			if a := net.ParseIP(ip).To4(); a != nil {
				b.AResource(dnsmessage.ResourceHeader{Name: question.Name, Class: dnsmessage.ClassINET, TTL: ans.TTL},
					dnsmessage.AResource{A: [4]byte(a)})
			}
		}
	}
	out, _ := b.Finish()
	if len(out) > limit {
		h.Truncated = true
		b := dnsmessage.NewBuilder(nil, h)
		b.StartQuestions()
		b.Question(question)
		out, _ = b.Finish()
	}
	return out
}
