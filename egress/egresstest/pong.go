package egresstest

import (
	"bufio"
	"net"
	"sync"
	"testing"
)

// HelloScript (python3) says, for each host:port argument, whether a Pong
// server answered its ping (ok), the connection was refused or reset
// before an answer (refused), or the name did not resolve (noname). A
// connection a proxy accepted and then reset reads as refused.
const HelloScript = `
import socket, sys
for target in sys.argv[1:]:
    host, port = target.rsplit(":", 1)
    try:
        s = socket.create_connection((host, int(port)), timeout=3)
        s.sendall(b"ping\n")
        print("ok" if s.recv(16).startswith(b"pong") else "refused")
        s.close()
    except (ConnectionRefusedError, ConnectionResetError):
        print("refused")
    except socket.gaierror:
        print("noname")
    except Exception as e:
        print("other", type(e).__name__)
`

// ErrnoScript (python3) says, for each proto:host:port argument, how a
// connection there ended: ok (a Pong server answered), or the error's
// name (ECONNREFUSED, ECONNRESET, EPERM...). A UDP target gets one
// datagram and waits for an answer on the connected socket.
const ErrnoScript = `
import errno, socket, sys
for target in sys.argv[1:]:
    proto, rest = target.split(":", 1)
    host, port = rest.rsplit(":", 1)
    host = host.strip("[]")
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    kind = socket.SOCK_DGRAM if proto == "udp" else socket.SOCK_STREAM
    s = socket.socket(fam, kind)
    s.settimeout(3)
    try:
        s.connect((host, int(port)))
        s.send(b"ping\n")
        print("ok" if s.recv(16).startswith(b"pong") else "other")
    except OSError as e:
        print(errno.errorcode.get(e.errno, type(e).__name__))
    s.close()
`

// Pong listens on addr (TCP) and answers the first line of each
// connection with pong; it returns its port and a count of the
// connections it accepted. The test's end closes it.
func Pong(t testing.TB, addr string) (port int, conns func() int) {
	t.Helper()
	ln, err := net.Listen("tcp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var mu sync.Mutex
	n := 0
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			n++
			mu.Unlock()
			go func() {
				defer c.Close()
				if _, err := bufio.NewReader(c).ReadString('\n'); err == nil {
					c.Write([]byte("pong\n"))
				}
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// HostAddr returns an IPv4 address of this host off its loopback, which a
// run with a network of its own reaches only through its policy; it skips
// the test when there is none.
func HostAddr(t testing.TB) string {
	t.Helper()
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Skip("needs an IPv4 address off the loopback")
	return ""
}
