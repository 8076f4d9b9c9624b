//go:build !linux

package desktop

import (
	"context"
	"errors"
	"net"
)

// DialVNC is Linux-only: a run's display lives in its namespaces.
func DialVNC(ctx context.Context, pid int) (net.Conn, error) {
	return nil, errors.New("a run's display needs Linux")
}
