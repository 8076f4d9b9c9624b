package netns

import (
	"net/netip"
	"os/exec"
	"testing"
)

// TestAttach_Failure checks that a failed Attach leaves no veth on the host
// and no eth0 in the namespace.
func TestAttach_Failure(t *testing.T) {
	cfg := testConfig(t)
	addr, err := Allocate(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) (Config, int, netip.Addr)
		noEth bool // the namespace must be left without eth0
	}{
		{"NoSuchPid", func(t *testing.T) (Config, int, netip.Addr) {
			return cfg, dead.Process.Pid, addr
		}, false},
		{"NoBridge", func(t *testing.T) (Config, int, netip.Addr) {
			c := cfg
			c.Bridge = "tinet" + randHex(6)
			return c, newNS(t), addr
		}, false},
		{"OutsideSubnet", func(t *testing.T) (Config, int, netip.Addr) {
			return cfg, newNS(t), netip.MustParseAddr("192.0.2.99")
		}, false},
		{"Gateway", func(t *testing.T) (Config, int, netip.Addr) {
			return cfg, newNS(t), cfg.Gateway()
		}, false},
		{"EthExists", func(t *testing.T) (Config, int, netip.Addr) {
			pid := newNS(t)
			_, a := attach(t, cfg, pid)
			return cfg, pid, a.Next()
		}, false},
		{"RouteExists", func(t *testing.T) (Config, int, netip.Addr) {
			return cfg, nsWithDefaultRoute(t), addr
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, pid, a := tc.setup(t)
			name := runName(t)
			if err := Attach(c, pid, name, a); err == nil {
				t.Fatal("Attach succeeded")
			} else {
				t.Log(err)
			}
			if hasLink(t, HostName(name)) {
				t.Fatalf("failed Attach left %s behind", HostName(name))
			}
			if out, err := inNS(pid, "ip", "link", "show", "eth0"); tc.noEth && err == nil {
				t.Fatalf("failed Attach left eth0 in the namespace:\n%s", out)
			}
		})
	}
}

// nsWithDefaultRoute returns a namespace that already has a default route
// (through a veth pair of its own), so Attach fails at its last step.
func nsWithDefaultRoute(t *testing.T) int {
	pid := newNS(t)
	for _, args := range [][]string{
		{"ip", "link", "add", "x0", "type", "veth", "peer", "name", "x1"},
		{"ip", "link", "set", "x0", "up"},
		{"ip", "addr", "add", "192.0.2.10/24", "dev", "x0"},
		{"ip", "route", "add", "default", "via", "192.0.2.1"},
	} {
		if out, err := inNS(pid, args...); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	return pid
}
