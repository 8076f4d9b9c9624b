package livefork

import (
	"errors"
	"os"
	"time"

	"github.com/tinehq/tine/confine"
)

// The CRIU engine checkpoints a whole process tree, threads included, with
// `criu dump --leave-running` (the source is frozen only while its state is
// read), and restores it into other runs' namespaces with `criu restore`.
// criu runs inside the namespaces of the run it works on (it joins the
// mount, pid, network, UTS and IPC namespaces of that run's supervisor),
// so the tree shares every namespace with criu and none has to be
// checkpointed: paths resolve in the run's view, and the restored tree
// keeps its pids, being the first processes of a new fork's pid
// namespace but its supervisor. Files criu cannot reach from there (those
// the supervisor opened outside the run's view: /dev/null, the service's
// log) are checkpointed as external and given back by the restorer as the
// fork's own.

// ErrCRIUFailed is wrapped by the errors of CRIUDump and Restore that come
// from criu itself; the message is criu's own reason in one line.
var ErrCRIUFailed = errors.New("criu failed")

// DumpSpec says which tree to checkpoint and where.
type DumpSpec struct {
	// Pid is the host pid of the tree's root.
	Pid int
	// Namespaces is the host pid of a process whose namespaces the tree
	// lives in (its run's supervisor); criu joins them.
	Namespaces int
	// Dir is the directory the images go to, best on a tmpfs; the caller
	// makes it (mode 0700) and removes it.
	Dir string
	// Hidden are paths the run's view covers: a file open below one is
	// checkpointed as external, as is one on a mount the run does not see.
	Hidden []string
	// Sockets are inodes of the tree's connected unix sockets whose peers
	// are outside it (UnixLinks): checkpointed as external, each is given
	// back by the restorer (RestoreSpec.Sockets). Any other such socket
	// fails the dump.
	Sockets []uint64
	// FrozenCgroup, when not "", is the directory of the tree's cgroup,
	// which the caller holds frozen: criu seizes the tree while frozen and
	// leaves it frozen, so that several trees dumped one after the other
	// are dumped as they were at one instant (their unix connections
	// consistent at both ends).
	FrozenCgroup string
}

// Dump is a checkpointed tree: the images in a directory, the files the
// restorer must give it, and how long the source was frozen.
type Dump struct {
	Dir string
	// Pause is how long criu held the tree frozen (its stats).
	Pause time.Duration
	// Took is how long the whole dump took.
	Took time.Duration
	// External are the files the restorer supplies, one per key.
	External []ExternalFile
	// Sockets are the external unix sockets (DumpSpec.Sockets) the
	// restorer supplies.
	Sockets []uint64
}

// ExternalFile is a file descriptor of the tree that was checkpointed as
// external (criu's "file[mnt_id:inode]").
type ExternalFile struct {
	Key  string // criu's key
	Pid  int    // host pid of a process holding it
	FD   int    // one of its descriptors for it
	Path string // where it was, in the host's view
}

// UnixLink is a connected unix socket of a tree (its inode) and its
// peer's inode, outside the tree.
type UnixLink struct {
	Ino, Peer uint64
}

// RestoreSpec says where a Dump is restored.
type RestoreSpec struct {
	// Namespaces is the host pid of the fork's supervisor, whose mount,
	// pid, network, UTS and IPC namespaces the tree is restored into.
	Namespaces int
	// CgroupProcs are the fork's cgroup.procs files; criu is put in them
	// before it starts, so the tree is restored inside the fork's cgroups.
	CgroupProcs []string
	// PidBase is where the run's own processes' pids start in its pid
	// namespace (supervisor.PidBase); criu's own take the 200 below it, so
	// that the restored pids are free. 0: criu takes the next pids.
	PidBase int
	// WorkDir receives criu's log and pid file (one per restore: many
	// restore from one Dump at once).
	WorkDir string
	// Files opens the fork's replacement for an external file: its log
	// for a service's stdout and stderr, /dev/null for /dev/null. An error
	// refuses the restore.
	Files func(ExternalFile) (path string, flag int, err error)
	// Sockets are the fork's sockets standing for the Dump's external
	// unix sockets, by inode: one end of a socket pair whose other end
	// goes to the restored peer, or is closed (the peer is gone: the tree
	// reads end of file, as from a client that hung up). A socket
	// missing refuses the restore.
	Sockets map[uint64]*os.File
	// Confine is how the fork confines its processes; the restored tree
	// is left stopped, each of its threads confined so (by injected
	// system calls, as a ptrace copy is), and only then let run. nil
	// leaves the tree with the source's confinement, which criu restores.
	Confine *confine.Plan
}

// Restored is a tree restored into a fork.
type Restored struct {
	NSPid int           // the root's pid in the fork's pid namespace
	Pid   int           // the root's host pid
	Took  time.Duration // criu restore and confinement, start to end
}
