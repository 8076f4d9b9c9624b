//go:build !linux

package httpapi

import (
	"context"
	"net"
)

// ConnContext notes which run a unix-socket peer lives in; runs exist only
// on Linux, so elsewhere every peer is the host.
func ConnContext(ctx context.Context, c net.Conn) context.Context { return ctx }
