package desktop

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"golang.org/x/sys/unix"
)

// DialVNC connects to the VNC server of the X server whose process is
// pid (on this host): to VNCSocket as that process sees its file system
// (resolved inside its root, so no link in the run leads out of it), and
// only if pid is what listens there (the socket's peer credentials). A run
// that put a server of its own in the X server's place gets
// ErrNotTheServer, and nothing of its server is read.
func DialVNC(ctx context.Context, pid int) (net.Conn, error) {
	root, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("the X server's root: %w", err)
	}
	defer unix.Close(root)
	fd, err := unix.Openat2(root, VNCSocket, &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return nil, fmt.Errorf("the X server's VNC socket %s: %w", VNCSocket, err)
	}
	defer unix.Close(fd)
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", "/proc/self/fd/"+strconv.Itoa(fd))
	if err != nil {
		return nil, fmt.Errorf("the X server's VNC socket %s: %w", VNCSocket, err)
	}
	if err := checkPeer(c.(*net.UnixConn), pid); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// checkPeer makes sure pid is the process that listens at the other end
// of c.
func checkPeer(c *net.UnixConn, pid int) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	cerr := raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if cerr != nil {
		return cerr
	}
	if err != nil {
		return fmt.Errorf("who serves %s: %w", VNCSocket, err)
	}
	if int(cred.Pid) != pid {
		return fmt.Errorf("%w: process %d listens at %s, not the X server (%d)", ErrNotTheServer, cred.Pid, VNCSocket, pid)
	}
	return nil
}
