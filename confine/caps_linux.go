package confine

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// dropCaps holds the calling thread to the capabilities in keep: out of
// the bounding set (so no exec, of a setuid binary or as root, gets them
// back) when the thread may drop them (CAP_SETPCAP; a process without it
// has none to lose), out of the permitted, effective and inheritable
// sets, and the ambient set cleared.
func dropCaps(keep uint64) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	if data[0].Effective&(1<<unix.CAP_SETPCAP) != 0 {
		for c := 0; c <= lastCap(); c++ {
			if keep&(1<<c) == 0 {
				if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
					return err
				}
			}
		}
	}
	for i := range data {
		k := uint32(keep >> (32 * i))
		data[i].Effective &= k
		data[i].Permitted &= k
		data[i].Inheritable &= k
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return err
	}
	return unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
}

// lastCap is the kernel's highest capability number.
func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if n, err2 := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && err2 == nil && n > 0 && n < 64 {
		return n
	}
	return unix.CAP_LAST_CAP
}
