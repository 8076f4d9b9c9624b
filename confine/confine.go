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
	// DropCaps takes every capability but KeptCaps out of the bounding,
	// permitted, effective, inheritable and ambient sets, for good: root
	// in a fork must not manage its network namespace (delete the egress
	// rules, change its address), open raw sockets, trace or make devices.
	DropCaps bool `json:"drop_caps,omitempty"`
	// DenySetID adds to the filter the calls that would give a file the
	// set-user-ID or set-group-ID bit (chmod and its kin, open and mknod
	// that create one so): root in a fork must not make a set-user-ID
	// program in its workspace, which a merge would carry to its source.
	DenySetID bool `json:"deny_setid,omitempty"`
	// Scoped keeps signals and abstract unix sockets within the process's
	// own Landlock domain (ABI 6): it and what it starts can neither signal
	// a process outside nor connect to an abstract socket one listens on.
	// For a run without a pid and network namespace of its own (the
	// daemon-less sandbox), where a fork could otherwise kill every process
	// of its owner's or reach the session's abstract sockets.
	Scoped bool `json:"scoped,omitempty"`
}

// KeptCaps are the capabilities a process confined with DropCaps keeps
// (as CAP_ numbers): those of a container's default set that root's
// ordinary work in its own files needs (owning and changing files,
// setting its ids, signalling its processes, binding a low port, chroot,
// writing the audit log), without CAP_NET_RAW, CAP_MKNOD and CAP_SETFCAP.
var KeptCaps = []int{
	0,  // CAP_CHOWN
	1,  // CAP_DAC_OVERRIDE
	3,  // CAP_FOWNER
	4,  // CAP_FSETID
	5,  // CAP_KILL
	6,  // CAP_SETGID
	7,  // CAP_SETUID
	8,  // CAP_SETPCAP
	10, // CAP_NET_BIND_SERVICE
	18, // CAP_SYS_CHROOT
	29, // CAP_AUDIT_WRITE
}

// keptMask is KeptCaps as a capability set.
func keptMask() uint64 {
	var m uint64
	for _, c := range KeptCaps {
		m |= 1 << c
	}
	return m
}

// Denied are the system calls the filter makes fail with EPERM: kernel
// modules and kexec, bpf and perf, keyrings, the kernel log, the clock,
// swap, reboot, raw I/O ports, file handles (open_by_handle_at reaches
// files by inode, beneath any mount), and io_uring, whose operations are
// system calls no seccomp filter sees (and a large part of the kernel's
// recent exploits); programs that use it (libuv, for one) fall back to
// plain calls when it is refused.
var Denied = []string{
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"bpf", "perf_event_open", "keyctl", "add_key", "request_key", "syslog", "userfaultfd",
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "swapon", "swapoff", "reboot",
	"iopl", "ioperm", "acct", "quotactl", "open_by_handle_at", "lookup_dcookie", "vhangup",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
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
	// DenyMounts says the filter denies DeniedMounts too (setns among
	// them): a process so confined cannot be forked live by ptrace.
	DenyMounts bool `json:"deny_mounts,omitempty"`
	DenySetID  bool `json:"deny_setid,omitempty"`
	// Scoped says signals and abstract sockets stay within the process's
	// tree (Spec.Scoped, on a kernel that has it).
	Scoped bool `json:"scoped,omitempty"`
	// Caps is the capability set a DropCaps process is held to (a mask
	// of CAP_ numbers); 0: not dropped.
	Caps   uint64   `json:"caps,omitempty"`
	Hidden []string `json:"hidden,omitempty"` // paths covered in the run's mount namespace
	// OtherWorkspaces counts the other workspaces covered; their paths are
	// not named (they may be other users').
	OtherWorkspaces int      `json:"other_workspaces,omitempty"`
	Unavailable     []string `json:"unavailable,omitempty"`
}

// Spec is the confinement a was probed for (a supervisor records its
// Applied): what a process of its run confined later, from outside, gets.
func (a Applied) Spec() Spec {
	return Spec{Writable: a.Writable, Seccomp: a.Seccomp, DenyMounts: a.DenyMounts, DropCaps: a.Caps != 0, DenySetID: a.DenySetID}
}

// Plan is a Spec's confinement as data, for a process confined from
// outside (a live-forked copy, into which package livefork injects the
// system calls): what Apply would do on this kernel, in the same order:
// no_new_privs, capabilities, Landlock, seccomp.
type Plan struct {
	// Landlock is the ruleset; nil for none.
	Landlock *Ruleset
	// Filter is the seccomp program, an array of struct sock_filter as the
	// kernel reads it; nil for none.
	Filter []byte
	// Caps, when not 0, is the capability set to hold the process to
	// (bounding, permitted, effective, inheritable; ambient cleared), and
	// LastCap the kernel's highest capability number.
	Caps    uint64
	LastCap int
	// Applied is what the plan confines by, as the run's evidence says it.
	Applied Applied
}

// Ruleset is the Landlock ruleset that lets writes only below Writable:
// access rights (LANDLOCK_ACCESS_FS_*) handled, and those each rule
// allows. The paths are opened (O_PATH) by the process confined, in its
// own view of the file system; a path missing there is skipped.
type Ruleset struct {
	Handled uint64 // handled_access_fs
	Root    uint64 // allowed beneath "/": read and execute, device ioctls
	Dir     uint64 // allowed beneath a writable directory
	File    uint64 // allowed on a writable file
	// Writable are the paths the Dir or File rule is given to.
	Writable []string
}

const (
	// WrapperName is argv[0] of the re-executed tine binary that confines
	// itself and execs the command.
	WrapperName = "tine-confine"
	specEnv     = "_TINE_CONFINE"
)
