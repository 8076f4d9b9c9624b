package supervisor

import (
	"errors"

	"golang.org/x/sys/unix"
)

// answers reports whether something listens on the unix socket at path:
// a connection the kernel accepts into a listener's queue, or refuses only
// because that queue is full. The supervisor's socket is open for as long
// as the supervisor runs (a zombie holds no files), and the kernel queues
// the connection without the supervisor's help, so a supervisor whose
// cgroup is frozen (a fork in progress) still answers. The connection is
// closed at once; the supervisor reads an empty request and drops it.
func answers(path string) bool {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	err = unix.Connect(fd, &unix.SockaddrUnix{Name: path})
	return err == nil || errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINPROGRESS)
}
