package netns

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// EnsureBridge makes cfg's bridge exist, carry the gateway address with the
// subnet's prefix length, and be up; with cfg.NAT it also sets up NAT (see
// ensureNAT). It is idempotent. A NAT failure is returned wrapping ErrNAT
// after the bridge itself is ready.
func EnsureBridge(cfg Config) error {
	cfg = cfg.Defaults()
	if err := cfg.check(); err != nil {
		return err
	}
	br, err := ensureBridgeLink(cfg.Bridge)
	if err != nil {
		return err
	}
	gw := &netlink.Addr{IPNet: ipNet(cfg.Gateway(), cfg.Subnet.Bits())}
	if err := netlink.AddrReplace(br, gw); err != nil {
		return fmt.Errorf("netns: address %s on bridge %s: %w", gw.IPNet, cfg.Bridge, err)
	}
	if err := netlink.LinkSetUp(br); err != nil {
		return fmt.Errorf("netns: set bridge %s up: %w", cfg.Bridge, err)
	}
	if cfg.NAT {
		return ensureNAT(cfg)
	}
	return nil
}

// ensureBridgeLink returns the bridge called name, creating it if missing.
// Another device of that name is an error.
func ensureBridgeLink(name string) (netlink.Link, error) {
	l, err := netlink.LinkByName(name)
	if errors.As(err, new(netlink.LinkNotFoundError)) {
		attrs := netlink.NewLinkAttrs()
		attrs.Name = name
		err = netlink.LinkAdd(&netlink.Bridge{LinkAttrs: attrs})
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("netns: create bridge %s: %w", name, err)
		}
		l, err = netlink.LinkByName(name)
	}
	if err != nil {
		return nil, fmt.Errorf("netns: bridge %s: %w", name, err)
	}
	if l.Type() != "bridge" {
		return nil, fmt.Errorf("netns: %s is a %s, not a bridge", name, l.Type())
	}
	return l, nil
}

// RemoveBridge deletes cfg's bridge; a missing bridge is not an error. The
// host ends of veths stay but are no longer enslaved. It leaves NAT alone.
func RemoveBridge(cfg Config) error {
	return delLink(cfg.Defaults().Bridge, "bridge")
}

// Attach gives the process pid, which already lives in its own network
// namespace, an interface on cfg's bridge: a veth pair whose host end,
// HostName(name), is enslaved to the bridge and up, and whose other end is
// created inside pid's namespace as PeerName ("eth0"), up with addr and the
// subnet's prefix length, beside lo (up) and a default route via the
// gateway. The bridge must exist (EnsureBridge). On failure Attach deletes
// the veth it created, leaving nothing behind.
func Attach(cfg Config, pid int, name string, addr netip.Addr) error {
	cfg = cfg.Defaults()
	host := HostName(name)
	if err := checkAttach(cfg, host, addr); err != nil {
		return err
	}
	br, err := netlink.LinkByName(cfg.Bridge)
	if err != nil {
		return fmt.Errorf("netns: attach %s: bridge %s: %w", name, cfg.Bridge, err)
	}
	ns, err := vnetns.GetFromPid(pid)
	if err != nil {
		return fmt.Errorf("netns: attach %s: namespace of pid %d: %w", name, pid, err)
	}
	defer ns.Close()
	veth, err := addVeth(host, ns)
	if err != nil {
		return fmt.Errorf("netns: attach %s: create veth %s: %w", name, host, err)
	}
	if err := wire(cfg, veth, br, ns, addr); err != nil {
		if derr := netlink.LinkDel(veth); derr != nil {
			err = errors.Join(err, fmt.Errorf("delete veth %s: %w", host, derr))
		}
		return fmt.Errorf("netns: attach %s: %w", name, err)
	}
	return nil
}

// checkAttach validates Attach's arguments before anything is created.
func checkAttach(cfg Config, host string, addr netip.Addr) error {
	if err := cfg.check(); err != nil {
		return err
	}
	if err := checkIfName(host); err != nil {
		return fmt.Errorf("netns: veth: %w", err)
	}
	return cfg.checkHost(addr)
}

// addVeth creates the veth pair host/PeerName with the peer born inside ns.
// The kernel creates both ends or neither.
func addVeth(host string, ns vnetns.NsHandle) (netlink.Link, error) {
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: host, TxQLen: -1},
		PeerName:      PeerName,
		PeerNamespace: netlink.NsFd(ns),
		PeerTxQLen:    -1,
	}
	err := netlink.LinkAdd(veth)
	if errors.Is(err, unix.EEXIST) && !linkExists(host) {
		err = fmt.Errorf("%s already exists in the namespace: %w", PeerName, err)
	}
	if err != nil {
		return nil, err
	}
	return veth, nil
}

// linkExists reports whether the host has a link called name.
func linkExists(name string) bool {
	_, err := netlink.LinkByName(name)
	return err == nil
}

// wire enslaves the host end to the bridge and configures the namespace.
func wire(cfg Config, veth, br netlink.Link, ns vnetns.NsHandle, addr netip.Addr) error {
	if err := netlink.LinkSetMasterByIndex(veth, br.Attrs().Index); err != nil {
		return fmt.Errorf("enslave %s to %s: %w", veth.Attrs().Name, cfg.Bridge, err)
	}
	if err := netlink.LinkSetUp(veth); err != nil {
		return fmt.Errorf("set %s up: %w", veth.Attrs().Name, err)
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return fmt.Errorf("netlink in namespace: %w", err)
	}
	defer h.Close()
	if err := configure(h, addr, cfg.Subnet.Bits(), cfg.Gateway()); err != nil {
		return err
	}
	return forgetNeighbour(br, addr)
}

// forgetNeighbour deletes the host's neighbour entry for addr on the
// bridge br: it may name the MAC of a run that had the address before (a
// fork that reuses a just-discarded one's), which the host would keep
// sending to, unanswered, until the entry goes stale (tens of seconds).
func forgetNeighbour(br netlink.Link, addr netip.Addr) error {
	n := &netlink.Neigh{LinkIndex: br.Attrs().Index, Family: netlink.FAMILY_V4, IP: net.IP(addr.AsSlice())}
	if err := netlink.NeighDel(n); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("forget the host's neighbour entry of %s: %w", addr, err)
	}
	return nil
}

// configure sets up lo and PeerName inside the namespace h talks to.
func configure(h *netlink.Handle, addr netip.Addr, bits int, gw netip.Addr) error {
	lo, err := h.LinkByName("lo")
	if err == nil {
		err = h.LinkSetUp(lo)
	}
	if err != nil {
		return fmt.Errorf("lo up: %w", err)
	}
	eth, err := h.LinkByName(PeerName)
	if err != nil {
		return fmt.Errorf("%s in namespace: %w", PeerName, err)
	}
	if err := h.AddrAdd(eth, &netlink.Addr{IPNet: ipNet(addr, bits)}); err != nil {
		return fmt.Errorf("address %s/%d on %s: %w", addr, bits, PeerName, err)
	}
	if err := h.LinkSetUp(eth); err != nil {
		return fmt.Errorf("%s up: %w", PeerName, err)
	}
	route := &netlink.Route{LinkIndex: eth.Attrs().Index, Gw: net.IP(gw.AsSlice())}
	if err := h.RouteAdd(route); err != nil {
		return fmt.Errorf("default route via %s: %w", gw, err)
	}
	return nil
}

// Detach deletes the host end of run name's veth pair, which takes the end
// inside the run's namespace with it. A missing veth is not an error. When a
// namespace's last process exits the kernel deletes the pair by itself
// (asynchronously), so Detach matters for a namespace that lives on and for
// sweeping leaks found by Links.
func Detach(name string) error {
	return delLink(HostName(name), "veth")
}

// delLink deletes the link called name if it exists and has type kind.
func delLink(name, kind string) error {
	l, err := netlink.LinkByName(name)
	if errors.As(err, new(netlink.LinkNotFoundError)) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("netns: find %s: %w", name, err)
	}
	if l.Type() != kind {
		return fmt.Errorf("netns: %s is a %s, not a %s", name, l.Type(), kind)
	}
	if err := netlink.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("netns: delete %s: %w", name, err) // ENODEV: its namespace ended meanwhile, taking it along
	}
	return nil
}

// Links returns the names of the tine veths on the host: veths named with
// HostPrefix that are enslaved to cfg's bridge or to nothing. The caller
// decides which belong to no live run and Detaches those.
func Links(cfg Config) ([]string, error) {
	cfg = cfg.Defaults()
	brIndex := -1
	if br, err := netlink.LinkByName(cfg.Bridge); err == nil {
		brIndex = br.Attrs().Index
	}
	all, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("netns: list links: %w", err)
	}
	var names []string
	for _, l := range all {
		a := l.Attrs()
		ours := a.MasterIndex == 0 || a.MasterIndex == brIndex
		if l.Type() == "veth" && strings.HasPrefix(a.Name, HostPrefix) && ours {
			names = append(names, a.Name)
		}
	}
	return names, nil
}

// Addr returns the IPv4 address of PeerName in the network namespace of
// process pid.
func Addr(pid int) (netip.Addr, error) {
	ns, err := vnetns.GetFromPid(pid)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("netns: namespace of pid %d: %w", pid, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("netns: netlink in namespace of pid %d: %w", pid, err)
	}
	defer h.Close()
	return peerAddr(h)
}

// peerAddr reads the first IPv4 address of PeerName through h.
func peerAddr(h *netlink.Handle) (netip.Addr, error) {
	eth, err := h.LinkByName(PeerName)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("netns: %s: %w", PeerName, err)
	}
	addrs, err := h.AddrList(eth, netlink.FAMILY_V4)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("netns: addresses of %s: %w", PeerName, err)
	}
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP.To4()); ok {
			return ip, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("netns: %s has no IPv4 address", PeerName)
}

// ipNet converts addr and a prefix length to the form netlink takes.
func ipNet(addr netip.Addr, bits int) *net.IPNet {
	return &net.IPNet{IP: net.IP(addr.AsSlice()), Mask: net.CIDRMask(bits, addr.BitLen())}
}
