package netns

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
)

// Defaults used for the zero fields of a Config.
const (
	DefaultBridge = "tine0"
	DefaultTable  = "tine"
)

// DefaultSubnet is the subnet used when Config.Subnet is the zero prefix.
var DefaultSubnet = netip.MustParsePrefix("10.231.0.0/16")

// HostPrefix starts the name of every host-side veth tine creates; see HostName.
const HostPrefix = "tv"

// PeerName is the name of the run's end of the veth pair, inside its namespace.
const PeerName = "eth0"

// maxIfName is the longest interface name Linux accepts (IFNAMSIZ-1).
const maxIfName = 15

var (
	// ErrNAT wraps any failure to set up or remove NAT (IP forwarding or the
	// nftables table). The bridge itself is usable without it, so a caller
	// may warn and go on: test with errors.Is.
	ErrNAT = errors.New("netns: NAT unavailable")

	// ErrFull is returned by Allocate when every address in the subnet is used.
	ErrFull = errors.New("netns: subnet full")

	// ErrUnsupported is returned off Linux, where runs share the host network.
	ErrUnsupported = errors.New("netns: network namespaces need Linux")
)

// Config describes the tine bridge. The zero value is usable: every zero
// field takes its default (bridge "tine0", subnet 10.231.0.0/16, nftables
// table "tine", no NAT). The gateway is the subnet's first address, which
// EnsureBridge assigns to the bridge.
type Config struct {
	// Bridge is the name of the bridge device; default DefaultBridge.
	Bridge string
	// Subnet is the IPv4 subnet runs get addresses from; default DefaultSubnet.
	Subnet netip.Prefix
	// NAT enables IP forwarding and masquerading of the subnet's traffic
	// leaving through any other interface, so runs reach the outside.
	NAT bool
	// Table is the nftables table (family ip) that holds the NAT rule;
	// default DefaultTable. One table serves one Config.
	Table string
}

// Defaults returns c with its zero fields set to their defaults and the
// subnet masked to its network address.
func (c Config) Defaults() Config {
	if c.Bridge == "" {
		c.Bridge = DefaultBridge
	}
	if !c.Subnet.IsValid() {
		c.Subnet = DefaultSubnet
	}
	c.Subnet = c.Subnet.Masked()
	if c.Table == "" {
		c.Table = DefaultTable
	}
	return c
}

// Gateway returns the bridge's address: the first address of the subnet.
func (c Config) Gateway() netip.Addr {
	return c.Defaults().Subnet.Addr().Next()
}

// check reports a Config tine cannot use: an interface name Linux would
// refuse, or a subnet that is not IPv4 or too small for a gateway and a run.
func (c Config) check() error {
	if err := checkIfName(c.Bridge); err != nil {
		return fmt.Errorf("netns: bridge: %w", err)
	}
	if !c.Subnet.Addr().Is4() || c.Subnet.Bits() > 30 {
		return fmt.Errorf("netns: subnet %s: need an IPv4 prefix of /30 or wider", c.Subnet)
	}
	return nil
}

// checkHost reports whether addr can be given to a run: inside the subnet,
// and neither its network, gateway nor broadcast address.
func (c Config) checkHost(addr netip.Addr) error {
	if !c.Subnet.Contains(addr) {
		return fmt.Errorf("netns: address %s is outside subnet %s", addr, c.Subnet)
	}
	if addr == c.Subnet.Addr() || addr == c.Gateway() || addr == broadcast(c.Subnet) {
		return fmt.Errorf("netns: address %s is reserved in subnet %s", addr, c.Subnet)
	}
	return nil
}

// broadcast returns the last address of the IPv4 prefix p.
func broadcast(p netip.Prefix) netip.Addr {
	a := p.Masked().Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3]) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// HostName returns the name of the host end of run name's veth pair:
// HostPrefix followed by the first 13 bytes of name, since Linux limits
// interface names to 15 bytes. Runs whose names share their first 13 bytes
// therefore collide; the second Attach fails rather than sharing a veth.
func HostName(name string) string {
	if len(name) > maxIfName-len(HostPrefix) {
		name = name[:maxIfName-len(HostPrefix)]
	}
	return HostPrefix + name
}

// checkIfName applies the kernel's rules for interface names.
func checkIfName(name string) error {
	switch {
	case name == "" || name == "." || name == "..":
		return fmt.Errorf("invalid interface name %q", name)
	case len(name) > maxIfName:
		return fmt.Errorf("interface name %q longer than %d bytes", name, maxIfName)
	case strings.ContainsAny(name, "/: \t\n\r\v\f\x00"):
		return fmt.Errorf("interface name %q has '/', ':' or a space", name)
	}
	return nil
}

// Allocate returns the lowest address of cfg's subnet that is not in used,
// skipping the network address, the gateway and the broadcast address. It
// returns ErrFull when none is left.
func Allocate(cfg Config, used []netip.Addr) (netip.Addr, error) {
	cfg = cfg.Defaults()
	if err := cfg.check(); err != nil {
		return netip.Addr{}, err
	}
	taken := make(map[netip.Addr]bool, len(used))
	for _, a := range used {
		taken[a.Unmap()] = true
	}
	last := broadcast(cfg.Subnet)
	for a := cfg.Gateway().Next(); a.Less(last); a = a.Next() {
		if !taken[a] {
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("%w: %s", ErrFull, cfg.Subnet)
}
