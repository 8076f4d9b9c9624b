package egress

import (
	"fmt"
	"net/netip"
	"os"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// ProxyTableName is the nftables table (family inet) that sends a
// sandbox's connections to its proxy, inside the sandbox's own network
// namespace.
const ProxyTableName = "tine_proxy"

// InstallProxy puts, in the network namespace of the calling process, the
// rules of a network whose every outbound packet lands on the loopback
// (the caller routes every address, IPv4 and IPv6, to lo), held by p as a
// run's own network is by Install: DNS on port 53, over UDP and TCP, goes
// to 127.0.0.1:53; the rest of the loopback stays as it is; a TCP
// connection to an address p's prefixes allow, or the resolver pinned for
// its port, goes to 127.0.0.1:proxy, where the proxy reads its destination
// (SO_ORIGINAL_DST), checks it again and dials it; every other TCP or UDP
// connection, IPv4 or IPv6, is refused at its first packet (reset, port
// unreachable: the client sees ECONNREFUSED) and remembered for
// NewRefusals. Root in a user namespace of one's own may do this in a
// network namespace it owns.
//
// It returns a netlink socket of this namespace, which another process
// may read and write with ProxyRules: the one that owns the user namespace
// (the sandbox's parent) has CAP_NET_ADMIN over it without entering it.
func InstallProxy(proxy uint16, p Policy) (*os.File, error) {
	c, err := nftables.New()
	if err != nil {
		return nil, fmt.Errorf("egress: nftables: %w", err)
	}
	r := proxyRules(nil)
	c.AddTable(r.table)
	for _, s := range []*nftables.Set{r.pinned, r.pinnedAny, r.refusedTCP, r.refusedUDP, r.refused6TCP, r.refused6UDP} {
		if err := c.AddSet(s, nil); err != nil {
			return nil, fmt.Errorf("egress: set %s: %w", s.Name, err)
		}
	}
	nat := c.AddChain(&nftables.Chain{Name: "out", Table: r.table, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityNATDest})
	for _, exprs := range r.proxyNAT(proxy, p) {
		c.AddRule(&nftables.Rule{Table: r.table, Chain: nat, Exprs: exprs})
	}
	accept := nftables.ChainPolicyAccept
	filter := c.AddChain(&nftables.Chain{Name: "filter", Table: r.table, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityFilter, Policy: &accept})
	for _, exprs := range r.proxyFilter() {
		c.AddRule(&nftables.Rule{Table: r.table, Chain: filter, Exprs: exprs})
	}
	if err := c.Flush(); err != nil {
		return nil, fmt.Errorf("egress: installing the proxy's rules: %w", err)
	}
	return openNetlink()
}

// ProxyRules returns the rules InstallProxy installed in the network
// namespace of sock, the socket it returned, read and written through
// sock: Pin and NewRefusals, one call at a time.
func ProxyRules(sock *os.File) *Rules { return proxyRules(newBridge(sock)) }

// proxyRules is the table of InstallProxy, operated through b (nil: not
// yet).
func proxyRules(b *bridge) *Rules {
	t := &nftables.Table{Name: ProxyTableName, Family: nftables.TableFamilyINet}
	dyn := func(name string, key nftables.SetDatatype) *nftables.Set {
		return &nftables.Set{Table: t, Name: name, KeyType: key, Concatenation: true, Dynamic: true}
	}
	r := &Rules{table: t, seenTCP: map[string]bool{}, seenUDP: map[string]bool{},
		pinned:     &nftables.Set{Table: t, Name: setPinned, KeyType: addrPort, Concatenation: true, HasTimeout: true},
		pinnedAny:  &nftables.Set{Table: t, Name: setPinnedAny, KeyType: nftables.TypeIPAddr, HasTimeout: true},
		refusedTCP: dyn(setRefusedT, addrPort), refusedUDP: dyn(setRefusedU, addrPort),
		refused6TCP: dyn(setRefused6T, addr6Port), refused6UDP: dyn(setRefused6U, addr6Port)}
	if b != nil {
		r.open = b.conn
	}
	return r
}

// proxyNAT is the NAT chain's rules: DNS to the resolver, allowed TCP
// connections to the proxy, the rest as they are (for the filter).
func (r *Rules) proxyNAT(proxy uint16, p Policy) [][]expr.Any {
	tcp := concat(ipv4(), proto(unix.IPPROTO_TCP))
	rules := [][]expr.Any{
		concat(ipv4(), proto(unix.IPPROTO_UDP), dport(53), redirectTo(53)),
		concat(tcp, dport(53), redirectTo(53)),
		concat(ipv4(), daddrIn(netip.MustParsePrefix("127.0.0.0/8")), verdict(expr.VerdictAccept)),
	}
	for _, rule := range p.Rules {
		switch {
		case !rule.Net.IsValid():
		case rule.Port == 0:
			rules = append(rules, concat(tcp, daddrIn(rule.Net), redirectTo(proxy)))
		default:
			rules = append(rules, concat(tcp, dport(rule.Port), daddrIn(rule.Net), redirectTo(proxy)))
		}
	}
	return append(rules,
		concat(tcp, loadDaddr(1), lookup(r.pinnedAny), redirectTo(proxy)),
		concat(tcp, loadDaddr(1), loadDport(9), lookup(r.pinned), redirectTo(proxy)))
}

// proxyFilter is the filter chain's rules: what reaches the loopback
// (redirected or not) passes, every other TCP or UDP packet is refused and
// remembered.
func (r *Rules) proxyFilter() [][]expr.Any {
	v6 := meta(expr.MetaKeyNFPROTO, []byte{unix.NFPROTO_IPV6})
	loadDaddr6 := []expr.Any{&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 24, Len: 16}}
	loop6 := netip.IPv6Loopback().As16()
	rst := []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_TCP_RST}}
	unreach := []expr.Any{&expr.Reject{Type: unix.NFT_REJECT_ICMPX_UNREACH, Code: unix.NFT_REJECT_ICMPX_PORT_UNREACH}}
	return [][]expr.Any{
		concat(ctState(expr.CtStateBitESTABLISHED|expr.CtStateBitRELATED), verdict(expr.VerdictAccept)),
		concat(ipv4(), daddrIn(netip.MustParsePrefix("127.0.0.0/8")), verdict(expr.VerdictAccept)),
		concat(v6, loadDaddr6, []expr.Any{&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: loop6[:]}}, verdict(expr.VerdictAccept)),
		concat(ipv4(), proto(unix.IPPROTO_TCP), loadDaddr(1), loadDport(9), remember(r.refusedTCP), rst),
		concat(ipv4(), proto(unix.IPPROTO_UDP), loadDaddr(1), loadDport(9), remember(r.refusedUDP), unreach),
		// An IPv6 address fills registers 1 to 4 (32-bit 8 to 11): its port
		// follows in 12.
		concat(v6, proto(unix.IPPROTO_TCP), loadDaddr6, loadDport(12), remember(r.refused6TCP), rst),
		concat(v6, proto(unix.IPPROTO_UDP), loadDaddr6, loadDport(12), remember(r.refused6UDP), unreach),
	}
}

// redirectTo sends the packet to port on the loopback.
func redirectTo(port uint16) []expr.Any {
	return []expr.Any{&expr.Immediate{Register: 1, Data: binaryutil.BigEndian.PutUint16(port)},
		&expr.Redir{RegisterProtoMin: 1}}
}
