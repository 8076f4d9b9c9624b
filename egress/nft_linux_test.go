package egress

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

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
		if err := r.Pin(netip.MustParseAddr("10.9.0.3"), []uint16{443}); err != nil {
			t.Fatal(err)
		}
		if err := r.Pin(netip.MustParseAddr("10.9.0.4"), []uint16{0}); err != nil {
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

// DNS to any server goes to the resolver on 127.0.0.1:53.
func TestInstall_RedirectsDNS(t *testing.T) {
	inNetns(t, func() {
		if _, err := Install(Policy{}); err != nil {
			t.Fatal(err)
		}
		pc, err := net.ListenPacket("udp4", "127.0.0.1:53")
		if err != nil {
			t.Fatal(err)
		}
		defer pc.Close()
		res := &Resolver{Policy: Policy{}, Refuse: func(Record) {}}
		go res.Serve(pc)
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
	})
}
