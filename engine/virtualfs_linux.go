package engine

import (
	"fmt"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
	"golang.org/x/sys/unix"
)

// virtualRoots are where the kernel's virtual file systems are mounted:
// no workspace may be, or be inside, one of them, whatever file system is
// mounted there (/dev is a tmpfs, /dev/shm another).
var virtualRoots = []string{"/proc", "/sys", "/dev"}

// virtualFS names the kernel's virtual file systems by their statfs
// magic: their files are the kernel's state, not anyone's work, and tine
// init would try to copy (or move) them. tmpfs and ramfs are real file
// systems held in memory (/tmp, /run) and are allowed.
var virtualFS = map[int64]string{
	unix.PROC_SUPER_MAGIC:      "proc",
	unix.SYSFS_MAGIC:           "sysfs",
	unix.DEVPTS_SUPER_MAGIC:    "devpts",
	unix.CGROUP_SUPER_MAGIC:    "cgroup",
	unix.CGROUP2_SUPER_MAGIC:   "cgroup2",
	unix.DEBUGFS_MAGIC:         "debugfs",
	unix.TRACEFS_MAGIC:         "tracefs",
	unix.SECURITYFS_MAGIC:      "securityfs",
	unix.SELINUX_MAGIC:         "selinuxfs",
	unix.SMACK_MAGIC:           "smackfs",
	unix.AAFS_MAGIC:            "apparmorfs",
	unix.BPF_FS_MAGIC:          "bpf",
	unix.PSTOREFS_MAGIC:        "pstore",
	unix.EFIVARFS_MAGIC:        "efivarfs",
	unix.BINFMTFS_MAGIC:        "binfmt_misc",
	unix.NSFS_MAGIC:            "nsfs",
	unix.USBDEVICE_SUPER_MAGIC: "usbdevfs",
	unix.HUGETLBFS_MAGIC:       "hugetlbfs",
	0x62656570:                 "configfs",
	0x65735543:                 "fusectl",
	0x19800202:                 "mqueue",
}

// checkRealFS refuses path (canonical) when it is, or is inside, a
// virtual file system of the kernel's (/proc, /sys, /dev, or one of
// their kinds mounted elsewhere).
func checkRealFS(path string) error {
	for _, root := range virtualRoots {
		if fstree.Within(path, root) {
			return fmt.Errorf("%s is inside %s, a virtual file system of the kernel's, not a directory of work: %w", path, root, tine.ErrInvalid)
		}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return fmt.Errorf("%s: %v: %w", path, err, tine.ErrInvalid)
	}
	if name, ok := virtualFS[int64(st.Type)]; ok {
		return fmt.Errorf("%s is on %s, a virtual file system of the kernel's, not a directory of work: %w", path, name, tine.ErrInvalid)
	}
	return nil
}
