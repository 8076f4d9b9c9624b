package main

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// closeStrayOnExec marks every descriptor above standard error that tine was
// started with close-on-exec: whatever a shell or a test harness left open
// (a pipe, a /dev/null of a mount namespace gone) must not reach the
// supervisors, services and agents tine starts, where it would pin what it
// names and keep a live fork (CRIU) from dumping the process. tine's own
// descriptors are opened close-on-exec already, and what it hands a child
// it passes explicitly.
func closeStrayOnExec() {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
}
