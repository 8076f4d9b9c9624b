// Package confine limits what a run's processes can do to the machine,
// beyond the namespaces their supervisor puts them in: Landlock lets them
// write only below the paths of their Spec, and a seccomp filter makes
// the system calls a coding agent never needs (mounting, kernel modules,
// bpf, keyrings, the kernel log, ...) fail with EPERM, the process going
// on. The supervisor starts each process through a wrapper, the tine binary
// re-executed as "tine-confine", which confines itself and then execs the
// command: confinement is in place before the command's first instruction.
package confine

// Spec is how one run's processes are confined.
type Spec struct {
	// Writable are the directories and files processes may write below;
	// everything else is read-only. Empty: no Landlock.
	Writable []string `json:"writable,omitempty"`
	// Seccomp turns on the filter of Denied, and DenyMounts adds
	// DeniedMounts to it.
	Seccomp    bool `json:"seccomp,omitempty"`
	DenyMounts bool `json:"deny_mounts,omitempty"`
}

// Denied are the system calls the filter makes fail with EPERM: kernel
// modules and kexec, bpf and perf, keyrings, the kernel log, the clock,
// swap, reboot, raw I/O ports, and file handles (open_by_handle_at reaches
// files by inode, beneath any mount).
var Denied = []string{
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"bpf", "perf_event_open", "keyctl", "add_key", "request_key", "syslog", "userfaultfd",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "swapon", "swapoff", "reboot",
	"iopl", "ioperm", "acct", "quotactl", "open_by_handle_at", "lookup_dcookie", "vhangup",
}

// DeniedMounts are denied too where DenyMounts says (in forks): mounting
// and moving mounts, and joining other namespaces. Sources keep them: a
// live fork of a source's process joins the fork's namespaces.
var DeniedMounts = []string{
	"mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "setns",
}

// denied is the filter's list for s.
func (s Spec) denied() []string {
	if s.DenyMounts {
		return append(append([]string(nil), Denied...), DeniedMounts...)
	}
	return Denied
}

// Applied says what confinement a run gets on this kernel.
type Applied struct {
	Landlock int      `json:"landlock_abi"` // 0: unavailable or not asked for
	Writable []string `json:"writable,omitempty"`
	Seccomp  bool     `json:"seccomp"`
	Denied   int      `json:"denied_syscalls,omitempty"`
	Hidden   []string `json:"hidden,omitempty"` // paths covered in the run's mount namespace
	// OtherWorkspaces counts the other workspaces covered; their paths are
	// not named (they may be other users').
	OtherWorkspaces int      `json:"other_workspaces,omitempty"`
	Unavailable     []string `json:"unavailable,omitempty"`
}

const (
	// WrapperName is argv[0] of the re-executed tine binary that confines
	// itself and execs the command.
	WrapperName = "tine-confine"
	specEnv     = "_TINE_CONFINE"
)
