package egress

import (
	"fmt"
	"net/netip"

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
// rules of a network whose every outbound connection lands on the
// loopback (the caller routes everything to lo): DNS on port 53, over UDP
// and TCP, goes to 127.0.0.1:53, the rest of the loopback stays as it is,
// and every other TCP connection goes to 127.0.0.1:proxy, where the proxy
// reads its destination (SO_ORIGINAL_DST) and decides. Root in a user
// namespace of one's own may do this in a network namespace it owns.
func InstallProxy(proxy uint16) error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("egress: nftables: %w", err)
	}
	t := c.AddTable(&nftables.Table{Name: ProxyTableName, Family: nftables.TableFamilyINet})
	ch := c.AddChain(&nftables.Chain{Name: "out", Table: t, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityNATDest})
	for _, exprs := range [][]expr.Any{
		concat(ipv4(), proto(unix.IPPROTO_UDP), dport(53), redirectTo(53)),
		concat(ipv4(), proto(unix.IPPROTO_TCP), dport(53), redirectTo(53)),
		concat(ipv4(), daddrIn(netip.MustParsePrefix("127.0.0.0/8")), verdict(expr.VerdictAccept)),
		concat(ipv4(), proto(unix.IPPROTO_TCP), redirectTo(proxy)),
	} {
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: exprs})
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("egress: installing the proxy's rules: %w", err)
	}
	return nil
}

// redirectTo sends the packet to port on the loopback.
func redirectTo(port uint16) []expr.Any {
	return []expr.Any{&expr.Immediate{Register: 1, Data: binaryutil.BigEndian.PutUint16(port)},
		&expr.Redir{RegisterProtoMin: 1}}
}
