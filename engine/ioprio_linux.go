package engine

import "golang.org/x/sys/unix"

// lowerIOPriority puts the calling thread in the idle I/O class (its
// reads and writes wait while anything else uses the disk) at the lowest
// CPU priority. The caller locks its goroutine to the thread and lets it
// end with the goroutine: the thread is never given back.
func lowerIOPriority() {
	const whoProcess, classIdle, classShift = 1, 3, 13 // linux/ioprio.h
	unix.Syscall(unix.SYS_IOPRIO_SET, whoProcess, 0, classIdle<<classShift)
	unix.Setpriority(unix.PRIO_PROCESS, 0, 19)
}
