package supervisor

import (
	"os"
	"strconv"
	"strings"
)

const lastPidFile = "/proc/sys/kernel/ns_last_pid"

// raisePids, before the supervisor starts a process, makes the run's pid
// namespace hand out pids from PidBase on if it has not reached it: the
// supervisor's own threads, made before and after, stay below it unless
// it has started something. Best effort: without it a CRIU restore may
// find its pids taken, and the fork restarts the service instead.
func raisePids() {
	b, err := os.ReadFile(lastPidFile)
	if err != nil {
		return
	}
	if last, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && last < PidBase-1 {
		os.WriteFile(lastPidFile, []byte(strconv.Itoa(PidBase-1)), 0)
	}
}

// claimPid makes pid the next pid the run's pid namespace hands out, when
// it is not 0 and no process has it; it reports whether it did. A thread
// the Go runtime makes in between may take it: then the process gets
// another pid, as it would have without.
func claimPid(pid int) bool {
	if pid <= 1 {
		return false
	}
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err == nil {
		return false
	}
	return os.WriteFile(lastPidFile, []byte(strconv.Itoa(pid-1)), 0) == nil
}
