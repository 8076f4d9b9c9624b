package supervisor

import (
	"os"
	"strconv"
)

// raisePids makes the run's pid namespace hand out pids from PidBase on
// (best effort: without it a CRIU restore may find its pids taken, and
// the fork restarts the service instead).
func raisePids() {
	os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(PidBase-1)), 0)
}
