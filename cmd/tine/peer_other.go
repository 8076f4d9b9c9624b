//go:build !linux

package main

import (
	"errors"
	"net"
)

// peerPid is the process at the other end of a unix socket connection;
// only Linux tells.
func peerPid(net.Conn) (int, error) { return 0, errors.ErrUnsupported }
