//go:build !linux

package netns

import (
	"context"
	"net"
	"net/netip"
)

// EnsureBridge returns ErrUnsupported off Linux.
func EnsureBridge(cfg Config) error { return ErrUnsupported }

// RemoveBridge has nothing to remove off Linux.
func RemoveBridge(cfg Config) error { return nil }

// RemoveNAT has nothing to remove off Linux.
func RemoveNAT(cfg Config) error { return nil }

// Attach returns ErrUnsupported off Linux.
func Attach(cfg Config, pid int, name string, addr netip.Addr) error { return ErrUnsupported }

// Detach has nothing to remove off Linux.
func Detach(name string) error { return nil }

// Links reports no veths off Linux.
func Links(cfg Config) ([]string, error) { return nil, nil }

// Addr returns ErrUnsupported off Linux.
func Addr(pid int) (netip.Addr, error) { return netip.Addr{}, ErrUnsupported }

// DialIn returns ErrUnsupported off Linux.
func DialIn(ctx context.Context, pid int, network, address string) (net.Conn, error) {
	return nil, ErrUnsupported
}
