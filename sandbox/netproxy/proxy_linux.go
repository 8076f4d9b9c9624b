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

// refusalPoll is how often the parent reads what the child's rules
// refused (and once more when the sandbox ends).
const refusalPoll = 250 * time.Millisecond

// goAhead is the parent's answer to the child's hello once it serves the
// sockets: only then does the child go on to run the command (without it,
// the child exits, running nothing).
var goAhead = []byte{'g'}

// hello is the one message the child sends its parent: the names of the
// sockets it passes, in order, or why it could not build its network.
type hello struct {
	Sockets []string `json:"sockets,omitempty"` // "dns-udp", "dns-tcp", "proxy", "host:P", "nft"
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
// policy's resolver, pinning in the child's rules, connections by the
// policy, host ports to the host's loopback, and what the child's rules
// refuse recorded; then it lets the child go on. It returns ErrEnded if
// the child ended first, else the reason it could not build its network
// or this process could not serve it (the child then exits without
// running the command).
func (p *Proxy) Start() error {
	err := p.start()
	if err != nil {
		p.Close()
	}
	return err
}

func (p *Proxy) start() error {
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
		return ErrEnded
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
	// The rules first: the resolver pins in them from its first answer.
	for i, name := range h.Sockets {
		if name == "nft" {
			p.keep(files[i])
			p.setRules(egress.ProxyRules(files[i]))
		}
	}
	for i, name := range h.Sockets {
		if name == "nft" {
			continue
		}
		if err := p.serve(name, files[i]); err != nil {
			return fmt.Errorf("the sandbox's network: %s: %w", name, err)
		}
	}
	if p.rules == nil {
		return errors.New("the sandbox's network: no rules to pin in")
	}
	if _, err := p.sock.Write(goAhead); err != nil {
		return fmt.Errorf("the sandbox's network: %w", err)
	}
	return nil
}

// setRules keeps the child's rules and watches what they refuse.
func (p *Proxy) setRules(r *egress.Rules) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules, p.stop, p.watched = r, make(chan struct{}), make(chan struct{})
	go p.watch(r, p.stop, p.watched)
}

// watch records what the child's rules refused, every refusalPoll and
// once more when stop closes.
func (p *Proxy) watch(r *egress.Rules, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(refusalPoll)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-stop:
			p.flush(r)
			return
		}
		p.flush(r)
	}
}

// flush records the child's rules' refusals since the last call.
func (p *Proxy) flush(r *egress.Rules) {
	recs, err := r.NewRecords(p.res.NameOf)
	if err != nil {
		log.Printf("netproxy: reading refusals: %v", err)
		return
	}
	for _, rec := range recs {
		p.refuseRecord(rec)
	}
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

// connect handles a connection the child's rules redirected to the proxy:
// dialled to its original destination if the policy allows it, else reset
// and recorded. The rules redirect only what they allow, so a reset here
// is a rule the command changed (it can with [confine] off) or a pin the
// resolver's names outlived: the check is the command's limit, the rules
// what makes a refusal a refusal.
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
	names, files, err := build(s)
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
	if err != nil {
		return err
	}
	ok := make([]byte, len(goAhead))
	if n, rerr := sock.Read(ok); rerr != nil || n != len(goAhead) || ok[0] != goAhead[0] {
		return errors.New("the parent did not serve the network")
	}
	return nil
}

// build sets the network up and returns its sockets, named.
func build(s Setup) ([]string, []*os.File, error) {
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
	// IPv6 too, where the namespace has it, so that its connections meet
	// the rules (refused and recorded) rather than fail unseen for want
	// of a route; without it (IPv6 off), they fail unseen.
	routeIPv6(lo)
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
	for _, port := range s.HostPorts {
		if _, err := listen("host:"+strconv.Itoa(port), port); err != nil {
			return nil, files, err
		}
	}
	nft, err := egress.InstallProxy(proxy, egress.Policy{Rules: s.Prefixes})
	if err := add("nft", nft, err); err != nil {
		return nil, files, err
	}
	return names, files, nil
}

// routeIPv6 routes every IPv6 address to lo, as build does IPv4.
func routeIPv6(lo netlink.Link) error {
	all := &net.IPNet{IP: net.IPv6zero, Mask: net.CIDRMask(0, 128)}
	return netlink.RouteAdd(&netlink.Route{LinkIndex: lo.Attrs().Index, Dst: all, Type: unix.RTN_LOCAL,
		Table: unix.RT_TABLE_LOCAL, Scope: netlink.SCOPE_HOST})
}
