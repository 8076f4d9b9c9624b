package supervisor

import (
	"context"
	"net"
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkHostNetDial measures what the resolver pays per upstream query
// for dialling from the host's network namespace: a UDP socket connected
// from a thread that joins another namespace (here a new one, with lo up,
// standing for the host's) and comes back (hostNet.Dial), against the same
// dial without the switch.
//
//	go test ./supervisor -run '^$' -bench HostNetDial -count 5
func BenchmarkHostNetDial(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("requires root: creates a network namespace")
	}
	own, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		b.Fatal(err)
	}
	defer own.Close()
	other := make(chan *os.File)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with its namespace
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			b.Error(err)
			other <- nil
			return
		}
		if err := loopbackUp(); err != nil {
			b.Error(err)
			other <- nil
			return
		}
		f, _ := os.Open("/proc/thread-self/ns/net")
		other <- f
	}()
	host := <-other
	if host == nil {
		b.FailNow()
	}
	defer host.Close()
	hn := &hostNet{host: host, own: own}
	for _, bc := range []struct {
		name string
		dial func(ctx context.Context, network, address string) (net.Conn, error)
	}{{"plain", (&net.Dialer{}).DialContext}, {"hostnet", hn.Dial}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				c, err := bc.dial(context.Background(), "udp4", "127.0.0.1:53")
				if err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
		})
	}
}
