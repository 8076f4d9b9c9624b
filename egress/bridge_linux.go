package egress

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"

	"github.com/google/nftables"
	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nltest"
	"golang.org/x/sys/unix"
)

// bridgePortID is the netlink port of a socket openNetlink makes: the one
// nltest gives its connections, which netlink.Conn checks dumps' replies
// against.
const bridgePortID = nltest.PID

// bridgeTimeout bounds the wait for the kernel's reply on a bridge: it
// answers a request before the request's send returns, so a reply missing
// is an error, not a wait.
const bridgeTimeout = 5

// openNetlink returns a netlink socket of the netfilter family, of the
// calling thread's network namespace, bound at bridgePortID, for a bridge.
func openNetlink() (*os.File, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	if err != nil {
		return nil, fmt.Errorf("egress: a netlink socket: %w", err)
	}
	f := os.NewFile(uintptr(fd), "netlink-netfilter")
	tv := unix.Timeval{Sec: bridgeTimeout}
	if err := errors.Join(unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Pid: bridgePortID}),
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)); err != nil {
		f.Close()
		return nil, fmt.Errorf("egress: a netlink socket: %w", err)
	}
	return f, nil
}

// A bridge runs nftables connections over a netlink socket made elsewhere
// (openNetlink, in a sandbox's network namespace), which this process
// could not make itself: it may not enter that namespace (setns needs
// CAP_SYS_ADMIN in its own), but a socket stays in the namespace it was
// made in, and the owner of the namespace's user namespace may administer
// it through it. google/nftables dials its own sockets; its one way to
// speak over another is nltest's Func, which this implements as a relay:
// requests go to the socket as they come, and each read asks the socket
// for one datagram of replies. One connection at a time uses it.
type bridge struct {
	mu   sync.Mutex
	sock *os.File
}

func newBridge(sock *os.File) *bridge { return &bridge{sock: sock} }

// conn returns a connection over the bridge, which is the caller's until
// it calls done.
func (b *bridge) conn() (*nftables.Conn, func(), error) {
	b.mu.Lock()
	c, err := nftables.New(nftables.WithTestDial(b.relay))
	if err != nil {
		b.mu.Unlock()
		return nil, nil, err
	}
	return c, b.mu.Unlock, nil
}

// relay sends reqs to the socket, or, without any (nltest's read), reads
// the next datagram of replies.
func (b *bridge) relay(reqs []netlink.Message) ([]netlink.Message, error) {
	fd := int(b.sock.Fd())
	if reqs != nil {
		var buf []byte
		for _, m := range reqs {
			m.Header.Length = uint32(nlmsgAlign(16 + len(m.Data)))
			raw, err := m.MarshalBinary()
			if err != nil {
				return nil, err
			}
			buf = append(buf, raw...)
		}
		return nil, unix.Sendto(fd, buf, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
	}
	buf := make([]byte, 1<<16)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return nil, os.NewSyscallError("recvfrom", err)
	}
	msgs, err := syscall.ParseNetlinkMessage(buf[:n])
	if err != nil {
		return nil, fmt.Errorf("egress: a netlink reply: %w", err)
	}
	out := make([]netlink.Message, len(msgs))
	for i, m := range msgs {
		h := m.Header
		out[i] = netlink.Message{Data: m.Data, Header: netlink.Header{Length: h.Len, Type: netlink.HeaderType(h.Type),
			Flags: netlink.HeaderFlags(h.Flags), Sequence: h.Seq, PID: h.Pid}}
	}
	return out, nil
}

func nlmsgAlign(n int) int { return (n + 3) &^ 3 }
