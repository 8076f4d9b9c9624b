package gitscope

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// openBeneath opens the file rel below directory top for reading, following
// no symbolic link on the way and never leaving top.
func openBeneath(top, rel string) (*os.File, error) {
	dir, err := unix.Open(top, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: top, Err: err}
	}
	defer unix.Close(dir)
	how := &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
	for {
		fd, err := unix.Openat2(dir, rel, how)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: filepath.Join(top, rel), Err: err}
		}
		return os.NewFile(uintptr(fd), filepath.Join(top, rel)), nil
	}
}
