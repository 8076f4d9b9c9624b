package netns

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"

	"github.com/tinehq/tine/internal/testkit"
)

// keepIPForward restores the host's IPv4 forwarding setting when the test ends.
func keepIPForward(t *testing.T) {
	old, err := os.ReadFile(ipForward)
	if err != nil {
		t.Skipf("cannot read %s: %v", ipForward, err)
	}
	t.Cleanup(func() { os.WriteFile(ipForward, old, 0) })
}

func TestEnsureBridge_NAT(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	keepIPForward(t)
	cfg := testConfig(t)
	cfg.NAT = true
	for range 2 {
		err := EnsureBridge(cfg)
		if errors.Is(err, ErrNAT) {
			t.Skipf("nf_tables unavailable: %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(ipForward); !bytes.HasPrefix(b, []byte("1")) {
		t.Errorf("ip_forward = %q", b)
	}
	rules := natRules(t, cfg)
	if len(rules) != 1 {
		t.Fatalf("%d rules after two EnsureBridge calls, want 1", len(rules))
	}
	if _, ok := rules[0].Exprs[len(rules[0].Exprs)-1].(*expr.Masq); !ok {
		t.Fatalf("rule %v does not end in masquerade", rules[0].Exprs)
	}
	for range 2 {
		if err := RemoveNAT(cfg); err != nil {
			t.Fatal(err)
		}
	}
	if tables := natTables(t, cfg); len(tables) != 0 {
		t.Fatalf("table %s survived RemoveNAT", cfg.Table)
	}
}

// natRules lists the rules of cfg's NAT chain.
func natRules(t *testing.T, cfg Config) []*nftables.Rule {
	t.Helper()
	c, err := nftables.New()
	if err != nil {
		t.Fatal(err)
	}
	tbl := natTable(cfg.Defaults())
	rules, err := c.GetRules(tbl, natChain(tbl))
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

// natTables lists the ip tables named cfg.Table.
func natTables(t *testing.T, cfg Config) []*nftables.Table {
	t.Helper()
	c, err := nftables.New()
	if err != nil {
		t.Fatal(err)
	}
	all, err := c.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		t.Fatal(err)
	}
	var out []*nftables.Table
	for _, tbl := range all {
		if tbl.Name == cfg.Table {
			out = append(out, tbl)
		}
	}
	return out
}

// TestEnsureBridge_NATMasquerades sends a connection from a run to an
// "outside" namespace reached through another host interface: the outside
// has no route back to the run's subnet, so it only answers if the host
// masqueraded the run's address as its own.
func TestEnsureBridge_NATMasquerades(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	keepIPForward(t)
	cfg := testConfig(t)
	cfg.NAT = true
	if err := EnsureBridge(cfg); errors.Is(err, ErrNAT) {
		t.Skipf("nf_tables unavailable: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	run := newNS(t)
	attach(t, cfg, run)
	outside, hostAddr, outAddr := outsideNS(t)
	const server = "import socket; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); " +
		"s.bind(('0.0.0.0', 4000)); s.listen(); c, a = s.accept(); c.sendall(a[0].encode())"
	srv := exec.Command("nsenter", "-t", strconv.Itoa(outside), "-n", "--", "/usr/bin/python3", "-c", server)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	client := fmt.Sprintf("import socket, time\n"+
		"for i in range(100):\n"+
		"  try: c = socket.create_connection(('%s', 4000), 5); break\n"+
		"  except ConnectionRefusedError: time.sleep(0.05)\n"+
		"print(c.recv(100).decode(), end='')", outAddr)
	out, err := inNS(run, "/usr/bin/python3", "-c", client)
	if err != nil || out != hostAddr.String() {
		t.Fatalf("outside saw the run as %q (%v), want the host's %s", out, err, hostAddr)
	}
}

// outsideNS makes a namespace joined to the host by a veth pair on a subnet
// of its own, with no route to anything else, and returns its pid, the
// host's address on the pair and the namespace's.
func outsideNS(t *testing.T) (pid int, host, out netip.Addr) {
	pid = newNS(t)
	var r [1]byte
	rand.Read(r[:])
	host = netip.AddrFrom4([4]byte{198, 18, r[0], 1})
	out = host.Next()
	attrs := netlink.NewLinkAttrs()
	attrs.Name = "tinet" + randHex(6)
	attrs.Flags = net.FlagUp
	veth := &netlink.Veth{LinkAttrs: attrs, PeerName: "out0", PeerNamespace: netlink.NsPid(pid)}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { netlink.LinkDel(veth) })
	if err := netlink.AddrAdd(veth, &netlink.Addr{IPNet: ipNet(host, 24)}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"ip", "addr", "add", out.String() + "/24", "dev", "out0"},
		{"ip", "link", "set", "out0", "up"},
	} {
		if o, err := inNS(pid, args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, o)
		}
	}
	return pid, host, out
}
