package tty

import (
	"fmt"
	"os"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// Open allocates a pseudo-terminal (github.com/creack/pty): its master,
// which tine keeps, and its slave, the terminal the command gets. The
// master is non-blocking (read deadlines work on it); the slave is
// blocking, as a command expects its terminal; neither is inherited across
// exec unless passed.
func Open() (master, slave *os.File, err error) {
	m, slave, err := pty.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("allocating a terminal: %w", err)
	}
	slave.Fd() // opened non-blocking by the os package; Fd makes it blocking
	// pty's ioctls went through m.Fd, which left the master blocking, and
	// an os.File once blocking stays so: a non-blocking copy replaces it.
	master, err = nonBlocking(m)
	if err != nil {
		slave.Close()
		return nil, nil, fmt.Errorf("allocating a terminal: %w", err)
	}
	return master, slave, nil
}

// nonBlocking returns a non-blocking duplicate of f, which it closes.
func nonBlocking(f *os.File) (*os.File, error) {
	defer f.Close()
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

// SetSize sets the window size of the terminal of f (a master or a slave);
// the kernel sends SIGWINCH to its foreground process group when it
// changes. Not pty.Setsize: it calls f.Fd, which makes a master blocking
// and ends its read deadlines.
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
