package procfs

import (
	"encoding/hex"
	"net/netip"
	"strconv"
	"strings"
)

// ListensLoopback reports whether a TCP socket in the listings tcp and
// tcp6 (the text of /proc/net/tcp and /proc/net/tcp6) listens on port
// where a connection to 127.0.0.1 reaches it: on the IPv4 loopback, on
// every IPv4 address, or on every address of a dual-stack IPv6 socket.
func ListensLoopback(tcp, tcp6 string, port uint16) bool {
	for _, text := range []string{tcp, tcp6} {
		for _, line := range strings.Split(text, "\n") {
			f := strings.Fields(line)
			if len(f) < 4 || f[3] != "0A" { // TCP_LISTEN
				continue
			}
			addr, p, ok := localAddr(f[1])
			if !ok || p != port {
				continue
			}
			if addr.IsUnspecified() || addr.Unmap().IsLoopback() && addr.Unmap().Is4() {
				return true
			}
		}
	}
	return false
}

// localAddr reads an address of /proc/net/tcp{,6}: hex, in the kernel's
// byte order (each 32-bit word little-endian on the machines tine runs
// on), then ":" and the port in hex.
func localAddr(s string) (netip.Addr, uint16, bool) {
	h, ps, ok := strings.Cut(s, ":")
	port, err := strconv.ParseUint(ps, 16, 16)
	b, err2 := hex.DecodeString(h)
	if !ok || err != nil || err2 != nil || (len(b) != 4 && len(b) != 16) {
		return netip.Addr{}, 0, false
	}
	for i := 0; i+4 <= len(b); i += 4 { // each word to network order
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	addr, _ := netip.AddrFromSlice(b)
	return addr, uint16(port), true
}
