package tty

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Open allocates a pseudo-terminal: its master, which tine keeps, and its
// slave, the terminal the command gets. The master is non-blocking (read
// deadlines work on it); neither is inherited across exec unless passed.
func Open() (master, slave *os.File, err error) {
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("allocating a terminal: %w", err)
	}
	n, err := unix.IoctlGetUint32(mfd, unix.TIOCGPTN)
	if err == nil {
		err = unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0) // unlockpt
	}
	if err != nil {
		unix.Close(mfd)
		return nil, nil, fmt.Errorf("allocating a terminal: %w", err)
	}
	name := "/dev/pts/" + strconv.FormatUint(uint64(n), 10)
	sfd, err := unix.Open(name, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(mfd)
		return nil, nil, fmt.Errorf("opening %s: %w", name, err)
	}
	return os.NewFile(uintptr(mfd), "/dev/ptmx"), os.NewFile(uintptr(sfd), name), nil
}

// SetSize sets the window size of the terminal of f (a master or a slave);
// the kernel sends SIGWINCH to its foreground process group when it
// changes.
func SetSize(f *os.File, s Size) error {
	return control(f, func(fd int) error {
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: s.Rows, Col: s.Cols})
	})
}

// GetSize returns the window size of the terminal of f.
func GetSize(f *os.File) (Size, error) {
	var s Size
	err := control(f, func(fd int) error {
		ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
		if err == nil {
			s = Size{Rows: ws.Row, Cols: ws.Col}
		}
		return err
	})
	return s, err
}

// control runs fn on f's descriptor without making f blocking (as Fd
// would).
func control(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
