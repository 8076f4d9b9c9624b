//go:build linux

package engine

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// pinDir opens the directory at the canonical path p without following a
// symlink anywhere on the way (openat2 RESOLVE_NO_SYMLINKS): p resolved to
// no symlink a moment ago, so one met now means a component was swapped
// for a symlink since, and the open fails with ELOOP.
func pinDir(p string) (*os.File, error) {
	how := &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	for {
		fd, err := unix.Openat2(unix.AT_FDCWD, p, how)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: p, Err: err}
		}
		return os.NewFile(uintptr(fd), p), nil
	}
}

// fdPath returns a path naming the open directory f itself, for this
// process and the commands it starts: /proc/PID/fd/N/. (the trailing
// "/." makes even a call that does not follow its last component, lstat,
// see the directory rather than the descriptor's link).
func fdPath(f *os.File) string { return fmt.Sprintf("/proc/%d/fd/%d/.", os.Getpid(), f.Fd()) }
