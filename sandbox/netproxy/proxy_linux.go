package netproxy

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tinehq/tine/egress"
	"github.com/tinehq/tine/internal/fdpass"
	"github.com/tinehq/tine/netns"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// dialTimeout bounds the parent's dial of a destination.
const dialTimeout = 10 * time.Second

// hello is the one message the child sends its parent: the names of the
// sockets it passes, in order, or why it could not build its network.
type hello struct {
	Sockets []string `json:"sockets,omitempty"` // "dns-udp", "dns-tcp", "proxy", "host:P"
	Error   string   `json:"error,omitempty"`
}

// Pair makes the pair of sockets the child's hello comes over, and returns
// the child's end, to pass it (the parent closes its copy once the child
// has started).
func (p *Proxy) Pair() (*os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("the sandbox's network: %w", err)
	}
	p.sock = os.NewFile(uintptr(fds[0]), "netproxy-parent")
	return os.NewFile(uintptr(fds[1]), "netproxy-child"), nil
}

// Start waits for the child's sockets and serves them: DNS with the
// policy's resolver, connections by the policy, host ports to the host's
// loopback. It returns the child's error if it could not build its
// network (the child then exits without running the command).
func (p *Proxy) Start() error {
	buf, oob := make([]byte, 4096), make([]byte, unix.CmsgSpace(4*(8+len(p.hostPorts))))
	n, oobn, _, _, err := unix.Recvmsg(int(p.sock.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return fmt.Errorf("the sandbox's network: %w", err)
	}
	files, err := fdpass.Files(oob[:oobn], "netproxy-socket")
	if err != nil {
		return fmt.Errorf("the sandbox's network: %w", err)
	}
	var h hello
	if n == 0 {
		h.Error = "the sandbox ended before building its network"
	} else if err := json.Unmarshal(buf[:n], &h); err != nil {
		h.Error = "a bad message from the sandbox: " + err.Error()
	}
	if h.Error == "" && len(h.Sockets) != len(files) {
		h.Error = fmt.Sprintf("the sandbox sent %d sockets for %d names", len(files), len(h.Sockets))
	}
	if h.Error != "" {
		for _, f := range files {
			f.Close()
		}
		return errors.New(h.Error)
	}
	for i, name := range h.Sockets {
		if err := p.serve(name, files[i]); err != nil {
			p.Close()
			return fmt.Errorf("the sandbox's network: %s: %w", name, err)
		}
	}
	return nil
}

// serve serves the socket named name that the child passed as f.
func (p *Proxy) serve(name string, f *os.File) error {
	defer f.Close() // net.File* dup it
	if name == "dns-udp" {
		pc, err := net.FilePacketConn(f)
		if err != nil {
			return err
		}
		p.keep(pc)
		go p.res.Serve(pc)
		return nil
	}
	ln, err := net.FileListener(f)
	if err != nil {
		return err
	}
	p.keep(ln)
	switch port, isHost := cutPort(name); {
	case name == "dns-tcp":
		go p.res.ServeTCP(ln)
	case name == "proxy":
		go accept(ln, p.connect)
	case isHost:
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		go accept(ln, func(c *net.TCPConn) { p.forward(c, addr) })
	default:
		return errors.New("an unknown socket")
	}
	return nil
}

func cutPort(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, "host:")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

func accept(ln net.Listener, handle func(*net.TCPConn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go handle(c.(*net.TCPConn))
	}
}

// connect handles a connection redirected to the proxy: dialled to its
// original destination if the policy allows it, else reset and recorded.
func (p *Proxy) connect(c *net.TCPConn) {
	dst, err := originalDst(c)
	if err != nil {
		log.Printf("netproxy: a connection's destination: %v", err)
		c.Close()
		return
	}
	if dst.Addr().IsLoopback() || !p.allows(dst) {
		p.refuse(dst)
		c.SetLinger(0) // a reset, not an end
		c.Close()
		return
	}
	p.forward(c, dst.String())
}

// forward dials addr from this process's network and splices c to it.
func (p *Proxy) forward(c *net.TCPConn, addr string) {
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	up, err := (&net.Dialer{}).DialContext(ctx, "tcp4", addr)
	cancel()
	if err != nil {
		c.SetLinger(0)
		return
	}
	defer up.Close()
	netns.Splice(c, up)
}

// originalDst is where c was going before the rules redirected it.
func originalDst(c *net.TCPConn) (netip.AddrPort, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, err
	}
	var dst netip.AddrPort
	var gerr error
	err = rc.Control(func(fd uintptr) {
		// sockaddr_in: family, port (big-endian), address.
		m, err := unix.GetsockoptIPv6Mreq(int(fd), unix.SOL_IP, unix.SO_ORIGINAL_DST)
		if err != nil {
			gerr = err
			return
		}
		b := m.Multiaddr
		dst = netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), binary.BigEndian.Uint16(b[2:4]))
	})
	return dst, errors.Join(err, gerr)
}

// Prepare builds the sandbox's side of its network, in the child, in a
// network namespace of its own: lo up, every IPv4 address routed to it,
// the rules that send DNS and connections to the parent's sockets, and
// those sockets, passed to the parent over s.FD. On failure it tells the
// parent why, and returns the error.
func Prepare(s Setup) error {
	sock := os.NewFile(uintptr(s.FD), "netproxy-child")
	defer sock.Close()
	names, files, err := build(s.HostPorts)
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	h := hello{Sockets: names}
	if err != nil {
		h = hello{Error: err.Error()}
		files = nil
	}
	b, _ := json.Marshal(h)
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	if serr := unix.Sendmsg(int(sock.Fd()), b, oob, nil, 0); serr != nil && err == nil {
		err = fmt.Errorf("passing the network's sockets: %w", serr)
	}
	return err
}

// build sets the network up and returns its sockets, named.
func build(hostPorts []int) ([]string, []*os.File, error) {
	lo, err := netlink.LinkByName("lo")
	if err == nil {
		err = netlink.LinkSetUp(lo)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("bringing lo up: %w", err)
	}
	all := &net.IPNet{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(0, 32)}
	if err := netlink.RouteAdd(&netlink.Route{LinkIndex: lo.Attrs().Index, Dst: all, Type: unix.RTN_LOCAL,
		Table: unix.RT_TABLE_LOCAL, Scope: netlink.SCOPE_HOST}); err != nil {
		return nil, nil, fmt.Errorf("routing to lo: %w", err)
	}
	var names []string
	var files []*os.File
	add := func(name string, f *os.File, err error) error {
		if err != nil {
			return fmt.Errorf("listening for %s: %w", name, err)
		}
		names, files = append(names, name), append(files, f)
		return nil
	}
	pc, err := net.ListenPacket("udp4", "127.0.0.1:53")
	if err != nil {
		return nil, nil, fmt.Errorf("listening for DNS: %w", err)
	}
	f, err := pc.(*net.UDPConn).File()
	pc.Close()
	if err := add("dns-udp", f, err); err != nil {
		return nil, files, err
	}
	listen := func(name string, port int) (uint16, error) {
		ln, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return 0, add(name, nil, err)
		}
		defer ln.Close()
		f, err := ln.(*net.TCPListener).File()
		return uint16(ln.Addr().(*net.TCPAddr).Port), add(name, f, err)
	}
	if _, err := listen("dns-tcp", 53); err != nil {
		return nil, files, err
	}
	proxy, err := listen("proxy", 0)
	if err != nil {
		return nil, files, err
	}
	for _, port := range hostPorts {
		if _, err := listen("host:"+strconv.Itoa(port), port); err != nil {
			return nil, files, err
		}
	}
	if err := egress.InstallProxy(proxy); err != nil {
		return nil, files, err
	}
	return names, files, nil
}
