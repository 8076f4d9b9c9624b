package egress

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netlink"
	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/sys/unix"
)

// inNetns runs fn on a thread of its own in a new network namespace with
// lo up and an interface 10.9.0.1/24 (one end of a veth pair whose other
// end has no address), through which the rest of 10.9.0.0/24 is routed and
// never answers.
func inNetns(t *testing.T, fn func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("requires root: creates a network namespace and nftables rules")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread dies with its namespace
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			t.Error(err)
			return
		}
		lo, _ := netlink.LinkByName("lo")
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "v0"}, PeerName: "v1"}
		addr, _ := netlink.ParseAddr("10.9.0.1/24")
		for _, err := range []error{netlink.LinkSetUp(lo), netlink.LinkAdd(veth), netlink.LinkSetUp(veth), netlink.AddrAdd(veth, addr)} {
			if err != nil {
				t.Error(err)
				return
			}
		}
		fn()
	}()
	<-done
}

func dialErr(addr string) error {
	c, err := net.DialTimeout("tcp4", addr, 300*time.Millisecond)
	if err == nil {
		c.Close()
	}
	return err
}

func TestInstall_RefusesRecordsAndPins(t *testing.T) {
	inNetns(t, func() {
		r, err := Install(Policy{Rules: []Rule{{Net: netip.MustParsePrefix("10.9.0.8/30"), Port: 80}}})
		if err != nil {
			t.Fatal(err)
		}
		if err := dialErr("10.9.0.2:80"); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("an unlisted destination: %v, want connection refused at once", err)
		}
		got, err := r.NewRefusals()
		if err != nil || len(got) != 1 || got[0] != (Refusal{netip.MustParseAddr("10.9.0.2"), 80, "tcp"}) {
			t.Errorf("refusals = %+v, %v", got, err)
		}
		if got, _ := r.NewRefusals(); len(got) != 0 {
			t.Errorf("refusals seen twice: %+v", got)
		}
		// Allowed destinations get through the rules (and time out: nothing
		// answers behind the dummy interface).
		if err := dialErr("10.9.0.9:80"); errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("a listed prefix is refused: %v", err)
		}
		if err := dialErr("10.9.0.9:81"); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("a listed prefix on another port: %v, want refused", err)
		}
		if err := r.Pin(Pin{netip.MustParseAddr("10.9.0.3"), []uint16{443}, time.Minute}); err != nil {
			t.Fatal(err)
		}
		if err := r.Pin(Pin{netip.MustParseAddr("10.9.0.4"), []uint16{0}, time.Minute}); err != nil {
			t.Fatal(err)
		}
		for _, ok := range []string{"10.9.0.3:443", "10.9.0.4:22", "10.9.0.4:443"} {
			if err := dialErr(ok); errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("pinned %s is refused", ok)
			}
		}
		if err := dialErr("10.9.0.3:80"); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("pinned for 443, dialled on 80: %v, want refused", err)
		}
		// Loopback is the run's own.
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		if err := dialErr(ln.Addr().String()); err != nil {
			t.Errorf("loopback: %v", err)
		}
	})
}

// DNS to any server, over UDP or TCP, goes to the resolver on 127.0.0.1:53.
func TestInstall_RedirectsDNS(t *testing.T) {
	inNetns(t, func() {
		if _, err := Install(Policy{}); err != nil {
			t.Fatal(err)
		}
		serveResolver(t, &Resolver{Policy: Policy{}, Refuse: func(Record) {}}, "127.0.0.1:53")
		c, err := net.Dial("udp4", "10.9.0.2:53")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write(query(t, 7, "example.com."))
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 512)
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("no answer from the resolver: %v", err)
		}
		var p dnsmessage.Parser
		h, err := p.Start(buf[:n])
		if err != nil || h.ID != 7 || h.RCode != dnsmessage.RCodeNameError {
			t.Errorf("answer %+v, %v; want NXDOMAIN for id 7", h, err)
		}
		tc, err := net.DialTimeout("tcp4", "10.9.0.2:53", 2*time.Second)
		if err != nil {
			t.Fatalf("DNS over TCP: %v", err)
		}
		defer tc.Close()
		if m := tcpQuery(t, tc, 8, "example.com."); m.Header.ID != 8 || m.Header.RCode != dnsmessage.RCodeNameError {
			t.Errorf("answer over TCP %+v; want NXDOMAIN for id 8", m.Header)
		}
	})
}

// pinnedKeys lists the elements of the pinned sets, with their timeouts.
func pinnedKeys(t *testing.T, r *Rules) map[string]time.Duration {
	t.Helper()
	c, err := nftables.New()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]time.Duration{}
	for _, s := range []*nftables.Set{r.pinned, r.pinnedAny} {
		els, err := c.GetSetElements(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, el := range els {
			k := netip.AddrFrom4([4]byte(el.Key[:4])).String()
			if len(el.Key) >= 6 {
				k += ":" + strconv.Itoa(int(binary.BigEndian.Uint16(el.Key[4:6])))
			}
			out[k] = el.Timeout
		}
	}
	return out
}

// A pin lasts its (clamped) TTL, each answer starts it anew, and then the
// address is refused again; a listed prefix never expires.
func TestPin_Expires(t *testing.T) {
	shortPins(t, time.Second)
	inNetns(t, func() {
		r, err := Install(Policy{Rules: []Rule{{Net: netip.MustParsePrefix("10.9.0.8/30"), Port: 80}}})
		if err != nil {
			t.Fatal(err)
		}
		pin := func() {
			if err := r.Pin(Pin{netip.MustParseAddr("10.9.0.3"), []uint16{443}, 0}); err != nil {
				t.Fatal(err)
			}
			if err := r.Pin(Pin{netip.MustParseAddr("10.9.0.4"), []uint16{0}, time.Hour}); err != nil {
				t.Fatal(err)
			}
		}
		pin()
		want := map[string]time.Duration{"10.9.0.3:443": time.Second, "10.9.0.4": time.Second}
		if got := pinnedKeys(t, r); !maps.Equal(got, want) {
			t.Errorf("pinned = %v, want %v", got, want)
		}
		time.Sleep(600 * time.Millisecond)
		pin() // refreshed: still there 1.2 s after the first pin
		time.Sleep(600 * time.Millisecond)
		if got := pinnedKeys(t, r); len(got) != 2 {
			t.Errorf("a pin answered again expired at its first time: %v", got)
		}
		for _, ok := range []string{"10.9.0.3:443", "10.9.0.4:22"} {
			if err := dialErr(ok); errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("pinned %s is refused", ok)
			}
		}
		time.Sleep(1200 * time.Millisecond)
		if got := pinnedKeys(t, r); len(got) != 0 {
			t.Errorf("pins outlived their time: %v", got)
		}
		for _, gone := range []string{"10.9.0.3:443", "10.9.0.4:22"} {
			if err := dialErr(gone); !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("expired pin %s: %v, want refused", gone, err)
			}
		}
		if err := dialErr("10.9.0.9:80"); errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("a listed prefix expired: %v", err)
		}
	})
}

// The addresses of a long answer are pinned in one transaction: 400 of
// them (one named twice), pinned and pinned again, in well under the 5 s
// that one transaction each took.
func TestPin_ManyAtOnce(t *testing.T) {
	inNetns(t, func() {
		r, err := Install(Policy{})
		if err != nil {
			t.Fatal(err)
		}
		var pins []Pin
		for i := range 400 {
			pins = append(pins, Pin{netip.AddrFrom4([4]byte{10, 7, byte(i / 200), byte(i%200 + 1)}), []uint16{443}, time.Minute})
		}
		pins = append(pins, Pin{pins[0].Addr, []uint16{443}, 2 * time.Minute})
		start := time.Now()
		for range 2 {
			if err := r.Pin(pins...); err != nil {
				t.Fatal(err)
			}
		}
		took := time.Since(start)
		got := pinnedKeys(t, r)
		if len(got) != 400 || got["10.7.0.1:443"] != 2*time.Minute || got["10.7.1.200:443"] != time.Minute {
			t.Errorf("%d pinned, 10.7.0.1:443 for %v, 10.7.1.200:443 for %v; want 400, the one named twice for the longer", len(got), got["10.7.0.1:443"], got["10.7.1.200:443"])
		}
		t.Logf("400 addresses pinned twice in %v", took)
		if took > 2*time.Second {
			t.Errorf("pinning 400 addresses twice took %v", took)
		}
	})
}

// A connection begun while its address was pinned goes on after the pin
// expired; a new one is refused.
func TestPin_EstablishedOutlivesPin(t *testing.T) {
	shortPins(t, time.Second)
	inNetns(t, func() {
		ln := peer(t)
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go func() { defer c.Close(); io.Copy(c, c) }()
			}
		}()
		r, err := Install(Policy{})
		if err != nil {
			t.Fatal(err)
		}
		if err := dialErr(peerAddr); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("before its pin: %v, want refused", err)
		}
		if err := r.Pin(Pin{netip.MustParseAddr("10.9.0.2"), []uint16{8080}, 0}); err != nil {
			t.Fatal(err)
		}
		c, err := net.DialTimeout("tcp4", peerAddr, time.Second)
		if err != nil {
			t.Fatalf("pinned: %v", err)
		}
		defer c.Close()
		echo := func(msg string) error {
			c.SetDeadline(time.Now().Add(2 * time.Second))
			if _, err := c.Write([]byte(msg)); err != nil {
				return err
			}
			buf := make([]byte, len(msg))
			if _, err := io.ReadFull(c, buf); err != nil {
				return err
			}
			if string(buf) != msg {
				return fmt.Errorf("echoed %q", buf)
			}
			return nil
		}
		if err := echo("before"); err != nil {
			t.Fatalf("while pinned: %v", err)
		}
		time.Sleep(1500 * time.Millisecond)
		if got := pinnedKeys(t, r); len(got) != 0 {
			t.Fatalf("the pin did not expire: %v", got)
		}
		if err := echo("after"); err != nil {
			t.Errorf("the established connection after its pin expired: %v", err)
		}
		if err := dialErr(peerAddr); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("a new connection after the pin expired: %v, want refused", err)
		}
	})
}

const peerAddr = "10.9.0.2:8080"

// peer moves v1 (see inNetns) into a network namespace of its own, as
// 10.9.0.2/24, and returns a TCP listener there on peerAddr. It must be
// called from inNetns's function.
func peer(t *testing.T) net.Listener {
	t.Helper()
	nsfd, moved := make(chan int), make(chan struct{})
	lnc := make(chan net.Listener)
	go func() {
		defer close(lnc)
		runtime.LockOSThread() // never unlocked: the thread dies with its namespace
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			t.Error(err)
			close(nsfd)
			return
		}
		fd, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Error(err)
			close(nsfd)
			return
		}
		nsfd <- fd
		<-moved
		v1, err := netlink.LinkByName("v1")
		if err != nil {
			t.Error(err)
			return
		}
		addr, _ := netlink.ParseAddr("10.9.0.2/24")
		for _, err := range []error{netlink.AddrAdd(v1, addr), netlink.LinkSetUp(v1)} {
			if err != nil {
				t.Error(err)
				return
			}
		}
		ln, err := net.Listen("tcp4", peerAddr)
		if err != nil {
			t.Error(err)
			return
		}
		lnc <- ln
	}()
	fd, ok := <-nsfd
	if !ok {
		t.FailNow()
	}
	defer unix.Close(fd)
	v1, err := netlink.LinkByName("v1")
	if err == nil {
		err = netlink.LinkSetNsFd(v1, fd)
	}
	close(moved)
	if err != nil {
		t.Fatal(err)
	}
	ln, ok := <-lnc
	if !ok {
		t.FailNow()
	}
	return ln
}
