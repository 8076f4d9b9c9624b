package tty

import (
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/term"
)

// Size is a terminal's window size.
type Size struct{ Rows, Cols uint16 }

// DefaultSize is the window size a terminal gets when the caller has none
// to copy.
var DefaultSize = Size{Rows: 24, Cols: 80}

// How long Finish copies output once the command has ended: until the
// terminal has been quiet for Quiet (a background job the command left may
// hold it open for ever), at most MaxDrain.
const (
	Quiet    = 100 * time.Millisecond
	MaxDrain = 2 * time.Second
)

// eof is what typing ^D sends: the end of input to a command reading lines.
const eof = 0x04

// Session is the caller's streams attached to a pseudo-terminal's master
// while a command runs on its slave.
type Session struct {
	master  *os.File
	out     io.Writer
	local   *os.File // the caller's terminal whose size the master follows, or nil
	restore func()
	winch   chan os.Signal
	pumped  chan struct{}
	ending  atomic.Bool
}

// Attach connects in and out to master: what in reads is typed into the
// terminal, and what the command writes to it goes to out. When in is a
// terminal it is in raw mode until Finish, so ^C, ^Z and every other key
// reach the command's terminal rather than tine. The master takes in's (or
// else out's) window size now and again on every SIGWINCH; with neither a
// terminal it gets DefaultSize. A non-terminal in's end is typed as ^D.
func Attach(master, in, out *os.File) (*Session, error) {
	s := &Session{master: master, out: out, restore: func() {}, pumped: make(chan struct{})}
	raw := term.IsTerminal(int(in.Fd()))
	switch {
	case raw:
		s.local = in
	case term.IsTerminal(int(out.Fd())):
		s.local = out
	}
	size := DefaultSize
	if s.local != nil {
		if sz, err := GetSize(s.local); err == nil && sz.Rows > 0 && sz.Cols > 0 {
			size = sz
		}
	}
	if err := SetSize(master, size); err != nil {
		return nil, err
	}
	if raw {
		st, err := term.MakeRaw(int(in.Fd()))
		if err != nil {
			return nil, err
		}
		s.restore = func() { term.Restore(int(in.Fd()), st) }
	}
	if s.local != nil {
		s.winch = make(chan os.Signal, 1)
		signal.Notify(s.winch, syscall.SIGWINCH)
		go s.followSize()
	}
	go s.pump()
	go s.feed(in, !raw)
	return s, nil
}

// followSize gives the master the caller's window size after each resize.
func (s *Session) followSize() {
	for range s.winch {
		if sz, err := GetSize(s.local); err == nil && sz.Rows > 0 && sz.Cols > 0 {
			SetSize(s.master, sz)
		}
	}
}

// EOFRepeat is how often the end of a non-terminal input is typed again
// (^D) while the command runs.
const EOFRepeat = 200 * time.Millisecond

// feed types what in reads into the terminal; at its end, if typeEOF, ^D,
// again every EOFRepeat until the command ends: a command that was not
// reading yet (a shell still setting up its line editor, which discards
// what was typed before) misses one ^D, as a person's typed too early, and
// would wait for input that never comes.
func (s *Session) feed(in io.Reader, typeEOF bool) {
	if _, err := io.Copy(s.master, in); err != nil || !typeEOF {
		return
	}
	for !s.ending.Load() {
		if _, err := s.master.Write([]byte{eof}); err != nil {
			return
		}
		time.Sleep(EOFRepeat)
	}
}

// pump copies the command's output to out until the terminal is closed on
// both sides (EIO), or, once ending, quiet.
func (s *Session) pump() {
	defer close(s.pumped)
	buf := make([]byte, 32<<10)
	for {
		n, err := s.master.Read(buf)
		if n > 0 {
			s.out.Write(buf[:n])
			if s.ending.Load() {
				s.master.SetReadDeadline(time.Now().Add(Quiet))
			}
		}
		if err != nil {
			return
		}
	}
}

// Finish is called once the command has ended (and the caller has closed
// its own copy of the slave): it copies the rest of the output, as long as
// the terminal is not quiet for Quiet and at most MaxDrain, then restores
// the caller's terminal and closes the master.
func (s *Session) Finish() {
	s.ending.Store(true)
	s.master.SetReadDeadline(time.Now().Add(Quiet))
	select {
	case <-s.pumped:
	case <-time.After(MaxDrain):
	}
	s.master.Close()
	<-s.pumped
	if s.winch != nil {
		signal.Stop(s.winch)
		close(s.winch)
	}
	s.restore()
}
