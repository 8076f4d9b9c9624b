package livefork

import (
	"encoding/binary"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// sockInfo describes a socket descriptor of a traced process, read through a
// duplicate taken with pidfd_getfd.
type sockInfo struct {
	domain, typ, proto int
	listening          bool
	connected          bool
	local              unix.Sockaddr
	v6only             bool
	backlog            int
}

func inspectSocket(pidfd, fd int) (sockInfo, error) {
	dup, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		return sockInfo{}, fmt.Errorf("pidfd_getfd fd %d: %w", fd, err)
	}
	defer unix.Close(dup)
	var si sockInfo
	for _, o := range []struct {
		opt int
		dst *int
	}{{unix.SO_DOMAIN, &si.domain}, {unix.SO_TYPE, &si.typ}, {unix.SO_PROTOCOL, &si.proto}} {
		if *o.dst, err = unix.GetsockoptInt(dup, unix.SOL_SOCKET, o.opt); err != nil {
			return si, fmt.Errorf("getsockopt fd %d: %w", fd, err)
		}
	}
	acc, _ := unix.GetsockoptInt(dup, unix.SOL_SOCKET, unix.SO_ACCEPTCONN)
	si.listening = acc == 1
	_, perr := unix.Getpeername(dup)
	si.connected = perr == nil
	if si.isTCPListener() {
		return si, si.readListener(dup)
	}
	return si, nil
}

func (si *sockInfo) readListener(fd int) error {
	var err error
	if si.local, err = unix.Getsockname(fd); err != nil {
		return fmt.Errorf("getsockname: %w", err)
	}
	if si.domain == unix.AF_INET6 {
		v, _ := unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY)
		si.v6only = v == 1
	}
	si.backlog = 128
	if ti, err := unix.GetsockoptTCPInfo(fd, unix.IPPROTO_TCP, unix.TCP_INFO); err == nil && ti.Sacked > 0 {
		si.backlog = int(ti.Sacked) // for a listener: sk_max_ack_backlog
	}
	return nil
}

func (si *sockInfo) isTCPListener() bool {
	return (si.domain == unix.AF_INET || si.domain == unix.AF_INET6) &&
		si.typ == unix.SOCK_STREAM && si.proto == unix.IPPROTO_TCP && si.listening
}

// describe names a socket that cannot be live-forked.
func (si *sockInfo) describe() string {
	switch {
	case si.domain == unix.AF_UNIX:
		return "unix socket"
	case si.domain == unix.AF_NETLINK:
		return "netlink socket"
	case si.domain != unix.AF_INET && si.domain != unix.AF_INET6:
		return fmt.Sprintf("socket of family %d", si.domain)
	case si.typ == unix.SOCK_DGRAM && si.proto == unix.IPPROTO_UDP:
		return "UDP socket"
	case si.connected:
		return "connected socket"
	case si.typ == unix.SOCK_STREAM:
		return "unconnected TCP socket"
	}
	return fmt.Sprintf("socket of type %d", si.typ)
}

// port returns the listener's local port.
func (si *sockInfo) port() int {
	switch a := si.local.(type) {
	case *unix.SockaddrInet4:
		return a.Port
	case *unix.SockaddrInet6:
		return a.Port
	}
	return 0
}

// rawSockaddr encodes the listener's address as the kernel's struct
// sockaddr_in or sockaddr_in6, for writing into the child's memory.
func (si *sockInfo) rawSockaddr() []byte {
	switch a := si.local.(type) {
	case *unix.SockaddrInet4:
		b := make([]byte, unix.SizeofSockaddrInet4)
		binary.LittleEndian.PutUint16(b, unix.AF_INET)
		binary.BigEndian.PutUint16(b[2:], uint16(a.Port))
		copy(b[4:], a.Addr[:])
		return b
	case *unix.SockaddrInet6:
		b := make([]byte, unix.SizeofSockaddrInet6)
		binary.LittleEndian.PutUint16(b, unix.AF_INET6)
		binary.BigEndian.PutUint16(b[2:], uint16(a.Port))
		copy(b[8:], a.Addr[:])
		binary.LittleEndian.PutUint32(b[24:], a.ZoneId)
		return b
	}
	return nil
}

func isSocket(link string) bool { return strings.HasPrefix(link, "socket:[") }
