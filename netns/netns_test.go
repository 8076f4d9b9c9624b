package netns

import (
	"errors"
	"net/netip"
	"testing"
)

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func TestConfig_Defaults(t *testing.T) {
	c := Config{}.Defaults()
	if c.Bridge != "tine0" || c.Subnet != DefaultSubnet || c.Table != "tine" || c.NAT {
		t.Fatalf("Defaults() = %+v", c)
	}
	if gw := c.Gateway(); gw != netip.MustParseAddr("10.231.0.1") {
		t.Fatalf("Gateway() = %s", gw)
	}
	c = Config{Subnet: netip.MustParsePrefix("10.9.8.7/24")}.Defaults()
	if c.Subnet.String() != "10.9.8.0/24" || c.Gateway().String() != "10.9.8.1" {
		t.Fatalf("Defaults() does not mask: %s gw %s", c.Subnet, c.Gateway())
	}
}

func TestConfig_check(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"Default", Config{}, true},
		{"Slash30", Config{Subnet: netip.MustParsePrefix("10.1.0.0/30")}, true},
		{"Slash31", Config{Subnet: netip.MustParsePrefix("10.1.0.0/31")}, false},
		{"IPv6", Config{Subnet: netip.MustParsePrefix("fd00::/64")}, false},
		{"LongBridge", Config{Bridge: "abcdefghijklmnop"}, false},
		{"SlashInBridge", Config{Bridge: "a/b"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Defaults().check(); (err == nil) != tc.ok {
				t.Fatalf("check() = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestConfig_checkHost(t *testing.T) {
	c := Config{Subnet: netip.MustParsePrefix("10.1.2.0/24")}.Defaults()
	for s, ok := range map[string]bool{
		"10.1.2.0": false, "10.1.2.1": false, "10.1.2.255": false, "10.1.3.5": false,
		"10.1.2.2": true, "10.1.2.254": true,
	} {
		if err := c.checkHost(netip.MustParseAddr(s)); (err == nil) != ok {
			t.Errorf("checkHost(%s) = %v, want ok=%v", s, err, ok)
		}
	}
}

func TestAllocate(t *testing.T) {
	small := Config{Subnet: netip.MustParsePrefix("10.1.2.0/29")} // .2 to .6 usable
	for _, tc := range []struct {
		name string
		cfg  Config
		used []netip.Addr
		want string
	}{
		{"Empty", Config{}, nil, "10.231.0.2"},
		{"Gap", small, addrs("10.1.2.2", "10.1.2.4"), "10.1.2.3"},
		{"Unordered", small, addrs("10.1.2.3", "10.1.2.2"), "10.1.2.4"},
		{"Last", small, addrs("10.1.2.2", "10.1.2.3", "10.1.2.4", "10.1.2.5"), "10.1.2.6"},
		{"ForeignUsed", small, addrs("10.9.9.9", "10.1.2.7"), "10.1.2.2"},
		{"Mapped", small, addrs("::ffff:10.1.2.2"), "10.1.2.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Allocate(tc.cfg, tc.used)
			if err != nil || got.String() != tc.want {
				t.Fatalf("Allocate() = %v, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func TestAllocate_Full(t *testing.T) {
	cfg := Config{Subnet: netip.MustParsePrefix("10.1.2.0/30")}
	used := addrs("10.1.2.2")
	if a, err := Allocate(cfg, used); !errors.Is(err, ErrFull) {
		t.Fatalf("Allocate() = %v, %v; want ErrFull", a, err)
	}
}

func TestHostName(t *testing.T) {
	for name, want := range map[string]string{
		"a":                "tva",
		"abcdefghijklm":    "tvabcdefghijklm",
		"abcdefghijklmnop": "tvabcdefghijklm",
	} {
		if got := HostName(name); got != want || len(got) > 15 {
			t.Errorf("HostName(%q) = %q, want %q", name, got, want)
		}
	}
}

func BenchmarkAllocate(b *testing.B) {
	cfg := Config{}
	used := make([]netip.Addr, 0, 256)
	a := cfg.Gateway()
	for range 256 {
		a = a.Next()
		used = append(used, a)
	}
	for b.Loop() {
		if _, err := Allocate(cfg, used); err != nil {
			b.Fatal(err)
		}
	}
}
