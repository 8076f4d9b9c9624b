package main

import (
	"os"
	"sync"

	"github.com/tinehq/tine/internal/tty"
)

// terminal is the pseudo-terminal of tine exec -t (and tine shell): the
// command's end of it, and this process's standard streams attached to the
// other. A nil *terminal is no terminal: its methods do nothing.
type terminal struct {
	slave *os.File
	sess  *tty.Session
	once  sync.Once
}

// openTerminal allocates a terminal and attaches this process's standard
// streams to it.
func openTerminal() (*terminal, error) {
	master, slave, err := tty.Open()
	if err != nil {
		return nil, err
	}
	sess, err := tty.Attach(master, os.Stdin, os.Stdout)
	if err != nil {
		master.Close()
		slave.Close()
		return nil, err
	}
	return &terminal{slave: slave, sess: sess}, nil
}

// streams are the command's standard streams: three times the command's
// end of the terminal, or without one this process's own.
func (t *terminal) streams() [3]*os.File {
	if t == nil {
		return [3]*os.File{os.Stdin, os.Stdout, os.Stderr}
	}
	return [3]*os.File{t.slave, t.slave, t.slave}
}

// slaveFile is the command's end, or nil.
func (t *terminal) slaveFile() *os.File {
	if t == nil {
		return nil
	}
	return t.slave
}

// started is called once the command holds its end: this process's copy
// goes, so the terminal ends when the command's side does.
func (t *terminal) started() {
	if t != nil {
		t.slave.Close()
	}
}

// finish, once the command has ended, copies the rest of its output and
// gives the caller's terminal back as it was. Later calls do nothing.
func (t *terminal) finish() {
	if t == nil {
		return
	}
	t.once.Do(func() {
		t.slave.Close()
		t.sess.Finish()
	})
}
