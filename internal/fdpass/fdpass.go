// Package fdpass reads the file descriptors a unix socket message carries
// (SCM_RIGHTS): one function, used wherever tine receives them (the
// supervisor's exec streams, the daemon's attach, the sandbox's network).
package fdpass

import (
	"os"

	"golang.org/x/sys/unix"
)

// Files returns the descriptors in the control messages oob as files named
// name, each close-on-exec (a process the receiver starts gets only those
// it passes on). Messages that carry no descriptors are skipped; the
// error is that of control messages that cannot be read at all.
func Files(oob []byte, name string) ([]*os.File, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var out []*os.File
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			unix.CloseOnExec(fd)
			out = append(out, os.NewFile(uintptr(fd), name))
		}
	}
	return out, nil
}
