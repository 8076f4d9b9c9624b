//go:build !linux

package httpapi

import (
	"context"
	"net"
)

// ConnContext judges whether a peer on the people's socket is a person;
// runs exist only on Linux, so elsewhere every peer is the host.
func ConnContext(ctx context.Context, c net.Conn) context.Context { return ctx }

// runConnContext marks every connection on run's own socket as that run's.
func runConnContext(run string, _ func() int) func(context.Context, net.Conn) context.Context {
	return func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, peerKey, peer{run: run, own: true})
	}
}

// peerUIDOfConn is the uid of the peer of uc: unknown here.
func peerUIDOfConn(*net.UnixConn) (int, bool) { return 0, false }
