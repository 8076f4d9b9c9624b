package netns

import (
	"errors"
	"fmt"
	"os"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// ipForward is the sysctl that lets the host route the runs' traffic out.
const ipForward = "/proc/sys/net/ipv4/ip_forward"

// natChainName is the chain, in cfg.Table, that holds the masquerade rule.
const natChainName = "postrouting"

// ensureNAT enables IPv4 forwarding and makes cfg.Table hold exactly one
// rule: masquerade traffic from the subnet that leaves through any interface
// but the bridge. The table, chain and rule are replaced in one atomic
// batch, so calling it again never duplicates the rule. Errors wrap ErrNAT.
func ensureNAT(cfg Config) error {
	if err := os.WriteFile(ipForward, []byte("1\n"), 0); err != nil {
		return natError("enable IPv4 forwarding", err)
	}
	c, err := nftables.New()
	if err != nil {
		return natError("nftables", err)
	}
	t := c.AddTable(natTable(cfg))
	ch := c.AddChain(natChain(t))
	c.FlushChain(ch)
	c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: masquerade(cfg)})
	if err := c.Flush(); err != nil {
		return natError("install table "+cfg.Table, err)
	}
	return nil
}

// RemoveNAT deletes cfg's nftables table; a missing table is not an error.
// IPv4 forwarding is left on, since other software may rely on it.
func RemoveNAT(cfg Config) error {
	cfg = cfg.Defaults()
	c, err := nftables.New()
	if err != nil {
		return natError("nftables", err)
	}
	c.DelTable(natTable(cfg))
	err = c.Flush()
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return natError("delete table "+cfg.Table, err)
	}
	return nil
}

// natError wraps err with ErrNAT and what was being done.
func natError(what string, err error) error {
	return fmt.Errorf("%w: %s: %w", ErrNAT, what, err)
}

// natTable is cfg's table in the ip family.
func natTable(cfg Config) *nftables.Table {
	return &nftables.Table{Name: cfg.Table, Family: nftables.TableFamilyIPv4}
}

// natChain is the source-NAT chain hooked at postrouting in t.
func natChain(t *nftables.Table) *nftables.Chain {
	return &nftables.Chain{
		Name:     natChainName,
		Table:    t,
		Type:     nftables.ChainTypeNAT,
		Hooknum:  nftables.ChainHookPostrouting,
		Priority: nftables.ChainPriorityNATSource,
	}
}

// masquerade is the rule
//
//	ip saddr SUBNET oifname != BRIDGE masquerade
func masquerade(cfg Config) []expr.Any {
	mask := ipNet(cfg.Subnet.Addr(), cfg.Subnet.Bits()).Mask
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: mask, Xor: make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: cfg.Subnet.Addr().AsSlice()},
		&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: IfName(cfg.Bridge)},
		&expr.Masq{},
	}
}

// IfName pads name with NULs to IFNAMSIZ, the form nftables compares
// interface names (oifname, iifname) in.
func IfName(name string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, name)
	return b
}
