package httpapi

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// Limits bound the connections a pool of listeners keeps open: in all,
// and per peer (a user on a unix socket, told by SO_PEERCRED; an address
// on TCP). A connection over either is answered 503 (code busy) and
// closed at once, its request unread.
type Limits struct {
	Total, PerPeer int
}

// DefaultLimits are tine serve's, for each of its pools: the people's
// sockets, the runs' sockets, and TCP.
var DefaultLimits = Limits{Total: 256, PerPeer: 32}

// ConnLimiter counts the open connections of the listeners it wraps.
// Build it with NewConnLimiter; share one among listeners that are one
// pool (the people's socket and the system socket).
type ConnLimiter struct {
	l     Limits
	mu    sync.Mutex
	total int
	open  map[string]int // by peer
}

// NewConnLimiter returns a limiter of l.
func NewConnLimiter(l Limits) *ConnLimiter {
	return &ConnLimiter{l: l, open: map[string]int{}}
}

// Listener wraps ln so that its connections count against the limiter.
func (cl *ConnLimiter) Listener(ln net.Listener) net.Listener {
	return &limitedListener{Listener: ln, cl: cl}
}

// take counts a connection of peer, or says why it may not open.
func (cl *ConnLimiter) take(peer string) error {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	switch {
	case cl.total >= cl.l.Total:
		return fmt.Errorf("the tine daemon has %d connections open, its most: try again in a moment", cl.total)
	case cl.open[peer] >= cl.l.PerPeer:
		return fmt.Errorf("%s has %d connections open to the tine daemon, its most: close some and try again", peer, cl.open[peer])
	}
	cl.total++
	cl.open[peer]++
	return nil
}

func (cl *ConnLimiter) release(peer string) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	cl.total--
	if cl.open[peer]--; cl.open[peer] <= 0 {
		delete(cl.open, peer)
	}
}

type limitedListener struct {
	net.Listener
	cl *ConnLimiter
}

// Accept returns the next connection within the limits; those over them
// are answered and closed on the side.
func (ln *limitedListener) Accept() (net.Conn, error) {
	for {
		c, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		peer := peerOf(c)
		if err := ln.cl.take(peer); err != nil {
			go refuseConn(c, err)
			continue
		}
		return &limitedConn{Conn: c, cl: ln.cl, peer: peer}, nil
	}
}

// peerOf names the peer of c for the per-peer limit.
func peerOf(c net.Conn) string {
	switch c := c.(type) {
	case *net.UnixConn:
		if uid, ok := peerUIDOfConn(c); ok {
			return "uid " + strconv.Itoa(uid)
		}
		return "an unknown user"
	case *net.TCPConn:
		if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			return a.IP.String()
		}
	}
	return c.RemoteAddr().String()
}

// refuseConn answers a connection over the limits with a 503 and closes
// it, reading at most a little of what it sent (so the answer is not lost
// to a reset), within a second.
func refuseConn(c net.Conn, why error) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	body := fmt.Sprintf("{\"error\": %q, \"code\": \"busy\"}\n", why.Error())
	fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	io.CopyN(io.Discard, c, 16<<10)
}

// limitedConn is a connection counted by a limiter until it is closed.
type limitedConn struct {
	net.Conn
	cl   *ConnLimiter
	peer string
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.cl.release(c.peer) })
	return err
}

// NetConn returns the connection itself (a *net.UnixConn, a *net.TCPConn).
func (c *limitedConn) NetConn() net.Conn { return c.Conn }

// unixConn is the unix socket connection c is, or wraps.
func unixConn(c net.Conn) (*net.UnixConn, bool) {
	for range 4 {
		if uc, ok := c.(*net.UnixConn); ok {
			return uc, true
		}
		w, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return nil, false
		}
		c = w.NetConn()
	}
	return nil, false
}
