package egress

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/tinehq/tine/netns"
	"golang.org/x/sys/unix"
)

// TableName is the nftables table (family inet) of a run's policy, inside
// the run's own network namespace: it goes with the namespace.
const TableName = "tine_egress"

// Set names in the table.
const (
	setPinned    = "pinned"     // addr . port the resolver pinned
	setPinnedAny = "pinned_any" // addr pinned for every port
	setRefusedT  = "refused_tcp"
	setRefusedU  = "refused_udp"
	setLoopTCP   = "loopback_tcp" // addr . port of new TCP connections to the run's own loopback
	setRefused6T = "refused6_tcp" // IPv6 addr . port, in a sandbox's table (InstallProxy)
	setRefused6U = "refused6_udp"
)

// Rules is a policy installed in the current network namespace (Install),
// or in a sandbox's (InstallProxy, ProxyRules).
type Rules struct {
	table                    *nftables.Table
	pinned, pinnedAny        *nftables.Set
	refusedTCP, refusedUDP   *nftables.Set
	refused6TCP, refused6UDP *nftables.Set // nil but in a sandbox's table
	loopTCP                  *nftables.Set // nil in a sandbox's table
	seenTCP, seenUDP         map[string]bool
	seenLoop                 map[string]bool
	// open returns a connection to the namespace the rules are in, and
	// what to call once done with it (nil: this process's namespace, a
	// connection each time).
	open func() (*nftables.Conn, func(), error)
}

var (
	addrPort  = nftables.MustConcatSetType(nftables.TypeIPAddr, nftables.TypeInetService)
	addr6Port = nftables.MustConcatSetType(nftables.TypeIP6Addr, nftables.TypeInetService)
)

// conn is a connection to the namespace of r, and what to call once done.
func (r *Rules) conn() (*nftables.Conn, func(), error) {
	if r.open != nil {
		return r.open()
	}
	c, err := nftables.New()
	return c, func() {}, err
}

// Install puts p's rules in the network namespace of the calling process:
// loopback and established traffic pass, IPv6 is dropped, the prefixes of p
// and the addresses the resolver pins pass, every other TCP or UDP
// connection is refused (reset, port unreachable) and remembered in a set
// that Refused reads, and DNS on port 53 goes to the resolver on
// 127.0.0.1:53.
func Install(p Policy) (*Rules, error) {
	c, err := nftables.New()
	if err != nil {
		return nil, fmt.Errorf("egress: nftables: %w", err)
	}
	t := c.AddTable(&nftables.Table{Name: TableName, Family: nftables.TableFamilyINet})
	r := &Rules{table: t, seenTCP: map[string]bool{}, seenUDP: map[string]bool{}, seenLoop: map[string]bool{},
		loopTCP:    &nftables.Set{Table: t, Name: setLoopTCP, KeyType: addrPort, Concatenation: true, Dynamic: true},
		pinned:     &nftables.Set{Table: t, Name: setPinned, KeyType: addrPort, Concatenation: true, HasTimeout: true},
		pinnedAny:  &nftables.Set{Table: t, Name: setPinnedAny, KeyType: nftables.TypeIPAddr, HasTimeout: true},
		refusedTCP: &nftables.Set{Table: t, Name: setRefusedT, KeyType: addrPort, Concatenation: true, Dynamic: true},
		refusedUDP: &nftables.Set{Table: t, Name: setRefusedU, KeyType: addrPort, Concatenation: true, Dynamic: true}}
	for _, s := range []*nftables.Set{r.pinned, r.pinnedAny, r.refusedTCP, r.refusedUDP, r.loopTCP} {
		if err := c.AddSet(s, nil); err != nil {
			return nil, fmt.Errorf("egress: set %s: %w", s.Name, err)
		}
	}
	accept := nftables.ChainPolicyAccept
	out := c.AddChain(&nftables.Chain{Name: "output", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityFilter, Policy: &accept})
	for _, exprs := range r.filter(p) {
		c.AddRule(&nftables.Rule{Table: t, Chain: out, Exprs: exprs})
	}
	dns := c.AddChain(&nftables.Chain{Name: "dns", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityNATDest})
	for _, pr := range []byte{unix.IPPROTO_UDP, unix.IPPROTO_TCP} {
		c.AddRule(&nftables.Rule{Table: t, Chain: dns, Exprs: concat(ipv4(), proto(pr), dport(53), []expr.Any{&expr.Redir{}})})
	}
	if err := c.Flush(); err != nil {
		return nil, fmt.Errorf("egress: installing the rules: %w", err)
	}
	return r, nil
}

// filter is the output chain's rules, in order.
func (r *Rules) filter(p Policy) [][]expr.Any {
	rules := [][]expr.Any{
		// Remembered, and let through: a connection to a port of the
		// loopback that nothing of the run listens on may be meant for the
		// host's (NewLoopback).
		concat(ipv4(), proto(unix.IPPROTO_TCP), ctState(expr.CtStateBitNEW), daddrIn(netip.MustParsePrefix("127.0.0.0/8")),
			loadDaddr(1), loadDport(9), remember(r.loopTCP)),
		concat(meta(expr.MetaKeyOIFNAME, netns.IfName("lo")), verdict(expr.VerdictAccept)),
		concat(ctState(expr.CtStateBitESTABLISHED|expr.CtStateBitRELATED), verdict(expr.VerdictAccept)),
		concat(meta(expr.MetaKeyNFPROTO, []byte{unix.NFPROTO_IPV6}), verdict(expr.VerdictDrop)),
		// DNS redirected to the resolver keeps the interface it was routed
		// to first, so loopback is also told by its address.
		concat(ipv4(), daddrIn(netip.MustParsePrefix("127.0.0.0/8")), verdict(expr.VerdictAccept)),
	}
	for _, rule := range p.Rules {
		if !rule.Net.IsValid() {
			continue
		}
		if rule.Port == 0 {
			rules = append(rules, concat(ipv4(), daddrIn(rule.Net), verdict(expr.VerdictAccept)))
			continue
		}
		for _, pr := range []byte{unix.IPPROTO_TCP, unix.IPPROTO_UDP} {
			rules = append(rules, concat(ipv4(), proto(pr), dport(rule.Port), daddrIn(rule.Net), verdict(expr.VerdictAccept)))
		}
	}
	rules = append(rules, concat(ipv4(), loadDaddr(1), lookup(r.pinnedAny), verdict(expr.VerdictAccept)))
	for _, pr := range []byte{unix.IPPROTO_TCP, unix.IPPROTO_UDP} {
		rules = append(rules, concat(ipv4(), proto(pr), loadDaddr(1), loadDport(9), lookup(r.pinned), verdict(expr.VerdictAccept)))
	}
	rules = append(rules,
		concat(ipv4(), proto(unix.IPPROTO_TCP), loadDaddr(1), loadDport(9), remember(r.refusedTCP),
			[]expr.Any{&expr.Reject{Type: unix.NFT_REJECT_TCP_RST}}),
		concat(ipv4(), proto(unix.IPPROTO_UDP), loadDaddr(1), loadDport(9), remember(r.refusedUDP),
			[]expr.Any{&expr.Reject{Type: unix.NFT_REJECT_ICMPX_UNREACH, Code: unix.NFT_REJECT_ICMPX_PORT_UNREACH}}),
		verdict(expr.VerdictDrop))
	return rules
}

// Pin allows new connections to each pin's address on each of its ports
// (0: every port) for its TTL, that of the answer that named it, clamped
// by pinFor; pinning an address again starts its time anew. Connections
// begun while it was pinned outlive the pin (the rules pass established
// traffic first). All the pins go in one transaction: a commit that
// deletes set elements waits for an RCU grace period (about 14 ms here),
// which one at a time made a 400-address answer take 5 s.
//
// Adding an element that is already in a set leaves its expiry as it was,
// so each element is added (a no-op if present), deleted and added with
// its new timeout: no packet sees it missing.
func (r *Rules) Pin(pins ...Pin) error {
	els := map[*nftables.Set][]nftables.SetElement{}
	at := map[string]int{} // set and key → index in els
	for _, p := range pins {
		a, timeout := p.Addr.As4(), pinFor(p.TTL)
		for _, port := range p.Ports {
			set, el := r.pinned, nftables.SetElement{Key: key(p.Addr, port), Timeout: timeout}
			if port == 0 {
				set, el = r.pinnedAny, nftables.SetElement{Key: a[:], Timeout: timeout}
			}
			k := set.Name + string(el.Key)
			if i, ok := at[k]; ok { // named twice: the longer pin
				els[set][i].Timeout = max(els[set][i].Timeout, timeout)
				continue
			}
			at[k] = len(els[set])
			els[set] = append(els[set], el)
		}
	}
	if len(els) == 0 {
		return nil
	}
	c, done, err := r.conn()
	if err != nil {
		return err
	}
	defer done()
	for _, set := range []*nftables.Set{r.pinned, r.pinnedAny} {
		if len(els[set]) == 0 {
			continue
		}
		for _, step := range []func(*nftables.Set, []nftables.SetElement) error{c.SetAddElements, c.SetDeleteElements, c.SetAddElements} {
			if err := step(set, els[set]); err != nil {
				return err
			}
		}
	}
	return c.Flush()
}

// Refusal is a destination the rules refused.
type Refusal struct {
	Addr  netip.Addr
	Port  uint16
	Proto string
}

// NewRefusals returns the destinations refused since the last call.
func (r *Rules) NewRefusals() ([]Refusal, error) {
	var out []Refusal
	for _, s := range []struct {
		set   *nftables.Set
		seen  map[string]bool
		proto string
	}{{r.refusedTCP, r.seenTCP, "tcp"}, {r.refusedUDP, r.seenUDP, "udp"}, {r.refused6TCP, r.seenTCP, "tcp"}, {r.refused6UDP, r.seenUDP, "udp"}} {
		if s.set == nil {
			continue
		}
		aps, err := r.newElements(s.set, s.seen)
		if err != nil {
			return nil, err
		}
		for _, ap := range aps {
			out = append(out, Refusal{Addr: ap.Addr(), Port: ap.Port(), Proto: s.proto})
		}
	}
	return out, nil
}

// NewRecords is NewRefusals as the records of refused connections, each
// named by nameOf (the resolver's name map), at the time of the call.
func (r *Rules) NewRecords(nameOf func(netip.Addr) string) ([]Record, error) {
	got, err := r.NewRefusals()
	if err != nil {
		return nil, err
	}
	now := time.Now().UTC()
	out := make([]Record, 0, len(got))
	for _, f := range got {
		out = append(out, Record{Time: now, Kind: "connect", Host: nameOf(f.Addr), Addr: f.Addr.String(), Port: f.Port, Proto: f.Proto})
	}
	return out, nil
}

// NewLoopback returns the loopback destinations (address and TCP port)
// that the run's processes began connecting to since the last call.
func (r *Rules) NewLoopback() ([]netip.AddrPort, error) {
	if r.loopTCP == nil {
		return nil, nil
	}
	return r.newElements(r.loopTCP, r.seenLoop)
}

// newElements returns the addr . port elements of set (IPv4 or, in a set
// of addr6Port, IPv6) that are not in seen, and adds them to it.
func (r *Rules) newElements(set *nftables.Set, seen map[string]bool) ([]netip.AddrPort, error) {
	c, done, err := r.conn()
	if err != nil {
		return nil, err
	}
	defer done()
	els, err := c.GetSetElements(set)
	if err != nil {
		return nil, err
	}
	n := 4
	if set.KeyType.Name == addr6Port.Name {
		n = 16
	}
	var out []netip.AddrPort
	for _, el := range els {
		if len(el.Key) < n+2 || seen[string(el.Key)] {
			continue
		}
		seen[string(el.Key)] = true
		a, _ := netip.AddrFromSlice(el.Key[:n])
		out = append(out, netip.AddrPortFrom(a, binary.BigEndian.Uint16(el.Key[n:n+2])))
	}
	return out, nil
}

// key is the element addr . port of a concatenated set: each part padded
// to a 32-bit register.
func key(addr netip.Addr, port uint16) []byte {
	a := addr.As4()
	return append(a[:], binaryutil.BigEndian.PutUint16(port)[0], binaryutil.BigEndian.PutUint16(port)[1], 0, 0)
}

func concat(parts ...[]expr.Any) []expr.Any {
	var out []expr.Any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func meta(k expr.MetaKey, want []byte) []expr.Any {
	return []expr.Any{&expr.Meta{Key: k, Register: 1}, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: want}}
}

func ipv4() []expr.Any { return meta(expr.MetaKeyNFPROTO, []byte{unix.NFPROTO_IPV4}) }

func proto(p byte) []expr.Any { return meta(expr.MetaKeyL4PROTO, []byte{p}) }

func ctState(bits uint32) []expr.Any {
	return []expr.Any{&expr.Ct{Key: expr.CtKeySTATE, Register: 1},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: binaryutil.NativeEndian.PutUint32(bits), Xor: make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: make([]byte, 4)}}
}

func loadDaddr(reg uint32) []expr.Any {
	return []expr.Any{&expr.Payload{DestRegister: reg, Base: expr.PayloadBaseNetworkHeader, Offset: 16, Len: 4}}
}

func loadDport(reg uint32) []expr.Any {
	return []expr.Any{&expr.Payload{DestRegister: reg, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2}}
}

func dport(port uint16) []expr.Any {
	return append(loadDport(1), &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(port)})
}

func daddrIn(p netip.Prefix) []expr.Any {
	mask := make([]byte, 4)
	binary.BigEndian.PutUint32(mask, ^uint32(0)<<(32-p.Bits()))
	a := p.Addr().As4()
	return append(loadDaddr(1),
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: mask, Xor: make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: a[:]})
}

func lookup(s *nftables.Set) []expr.Any {
	return []expr.Any{&expr.Lookup{SourceRegister: 1, SetName: s.Name, SetID: s.ID}}
}

func remember(s *nftables.Set) []expr.Any {
	return []expr.Any{&expr.Dynset{SrcRegKey: 1, SetName: s.Name, SetID: s.ID, Operation: uint32(unix.NFT_DYNSET_OP_ADD)}}
}

func verdict(k expr.VerdictKind) []expr.Any { return []expr.Any{&expr.Verdict{Kind: k}} }
