package main

import (
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// peerPid is the process at the other end of a unix socket connection
// (SO_PEERCRED).
func peerPid(c net.Conn) (int, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return 0, fmt.Errorf("not a unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	cerr := raw.Control(func(fd uintptr) { cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
	if cerr != nil {
		return 0, cerr
	}
	if err != nil || cred == nil || cred.Pid <= 0 {
		return 0, fmt.Errorf("no peer credentials: %v", err)
	}
	return int(cred.Pid), nil
}
