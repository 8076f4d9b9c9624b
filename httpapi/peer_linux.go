package httpapi

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/access"
	"github.com/tinehq/tine/internal/procfs"
	"golang.org/x/sys/unix"
)

// ConnContext judges, for a connection on the people's socket, whether the
// peer process is a person: it must be in the daemon's own pid and mount
// namespaces and in no run's cgroup. Every run lives in a pid namespace of
// its own, which code in it cannot leave (unlike its cgroup), so it is
// never taken for a person; its requests are refused here and belong on
// its run's own socket (RunSockets). Use it as the people's
// http.Server.ConnContext.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	uc, ok := unixConn(c)
	if !ok {
		return ctx
	}
	return context.WithValue(ctx, peerKey, judgePeer(uc))
}

// runConnContext marks every connection on run's own socket as that run's.
// A peer in another run's pid namespace is foreign: a run may not speak on
// another's socket. supervisor gives the run's supervisor's host pid (0
// when it has none).
func runConnContext(run string, supervisor func() int) func(context.Context, net.Conn) context.Context {
	return func(ctx context.Context, c net.Conn) context.Context {
		p := peer{run: run, own: true}
		if uc, ok := unixConn(c); ok {
			p.foreign = foreignToRun(uc, supervisor)
		}
		return context.WithValue(ctx, peerKey, p)
	}
}

// nsID names a namespace: the device and inode of its nsfs file.
type nsID struct{ dev, ino uint64 }

// ownNS are the daemon's own pid and mount namespaces, read once.
var ownNS = sync.OnceValues(func() (pid, mnt nsID) {
	pid, _ = nsOf("/proc/self/ns/pid")
	mnt, _ = nsOf("/proc/self/ns/mnt")
	return pid, mnt
})

func nsOf(path string) (nsID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nsID{}, err
	}
	st := fi.Sys().(*syscall.Stat_t)
	return nsID{uint64(st.Dev), st.Ino}, nil
}

// credOf returns the peer's host pid and, where the kernel gives one
// (SO_PEERPIDFD, Linux 6.5), a pidfd of it (-1 otherwise).
func credOf(uc *net.UnixConn) (pid, pidfd int, err error) {
	cred, pidfd, err := ucredOf(uc)
	return int(cred.Pid), pidfd, err
}

// peerUIDOfConn is the uid of the peer of uc (SO_PEERCRED).
func peerUIDOfConn(uc *net.UnixConn) (int, bool) {
	raw, err := uc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var cred *unix.Ucred
	cerr := raw.Control(func(fd uintptr) { cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) })
	if cerr != nil || err != nil || cred == nil {
		return 0, false
	}
	return int(cred.Uid), true
}

// ucredOf is credOf with the peer's uid and gid.
func ucredOf(uc *net.UnixConn) (_ unix.Ucred, pidfd int, err error) {
	raw, err := uc.SyscallConn()
	if err != nil {
		return unix.Ucred{}, -1, err
	}
	pidfd = -1
	var cred *unix.Ucred
	cerr := raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if err == nil {
			if pfd, perr := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PEERPIDFD); perr == nil {
				pidfd = pfd
			}
		}
	})
	if cerr != nil {
		err = cerr
	}
	if err != nil || cred == nil || cred.Pid <= 0 {
		if pidfd >= 0 {
			unix.Close(pidfd)
		}
		return unix.Ucred{}, -1, fmt.Errorf("the peer's credentials: %v (pid not in the daemon's pid namespace?)", err)
	}
	return *cred, pidfd, nil
}

// peerNS reads the pid and mount namespaces of pid, checking afterwards that
// pid is still the process that connected (by its pidfd, or else by its
// start time), so a recycled pid is not read in its place.
func peerNS(pid, pidfd int) (pidNS, mntNS nsID, err error) {
	before := ""
	if pidfd < 0 {
		st, err := procfs.Read("", pid)
		if err != nil {
			return nsID{}, nsID{}, err
		}
		before = st.StartTime
	}
	dir := "/proc/" + strconv.Itoa(pid) + "/ns/"
	if pidNS, err = nsOf(dir + "pid"); err == nil {
		mntNS, err = nsOf(dir + "mnt")
	}
	if err != nil {
		return nsID{}, nsID{}, err
	}
	if pidfd >= 0 {
		if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
			return nsID{}, nsID{}, fmt.Errorf("the peer exited: %v", err)
		}
	} else if st, err := procfs.Read("", pid); err != nil || st.StartTime != before {
		return nsID{}, nsID{}, fmt.Errorf("the peer exited")
	}
	return pidNS, mntNS, nil
}

// judgePeer decides whether the peer of a connection on the people's socket
// is a person; anything it cannot tell makes it code inside a run.
func judgePeer(uc *net.UnixConn) peer {
	cred, pidfd, err := ucredOf(uc)
	if err != nil {
		return peer{run: unknownRun, why: err.Error()}
	}
	if pidfd >= 0 {
		defer unix.Close(pidfd)
	}
	pid := int(cred.Pid)
	p := peer{pid: pid, run: unknownRun, user: userOf(cred, pid)}
	pidNS, mntNS, err := peerNS(pid, pidfd)
	ownPid, ownMnt := ownNS()
	cg := runOfPid(pid)
	switch {
	case err != nil:
		p.why = fmt.Sprintf("its namespaces cannot be read: %v", err)
	case pidNS != ownPid:
		p.why = "it is in another pid namespace than the daemon (a run's)"
	case mntNS != ownMnt:
		p.why = "it is in another mount namespace than the daemon (a run's)"
	case cg == unknownRun:
		p.why = "its cgroup cannot be read"
	case cg != "":
		p.why = "it is in run " + cg + "'s cgroup"
	default:
		p.run = ""
	}
	if p.run != "" && cg != "" && cg != unknownRun {
		p.run = cg
	}
	return p
}

// userOf is who the peer is: its uid and groups (its gid and the
// supplementary groups in /proc/PID/status, read while the caller checks
// the pid is still the peer's).
func userOf(cred unix.Ucred, pid int) *access.Caller {
	c := access.New(int(cred.Uid), int(cred.Gid))
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Groups:"); ok {
			for _, f := range strings.Fields(rest) {
				if g, err := strconv.Atoi(f); err == nil {
					c.Groups[g] = true
				}
			}
		}
	}
	return c
}

// nsGetParent is NS_GET_PARENT (linux/nsfs.h): the parent of a pid namespace.
const nsGetParent = 0xb702

// foreignToRun reports whether the peer of a connection on a run's socket
// is in another run: in a pid namespace that is neither the daemon's (the
// host) nor the run's own or one nested in it.
func foreignToRun(uc *net.UnixConn, supervisor func() int) bool {
	pid, pidfd, err := credOf(uc)
	if err != nil {
		return true
	}
	if pidfd >= 0 {
		defer unix.Close(pidfd)
	}
	pidNS, _, err := peerNS(pid, pidfd)
	if err != nil {
		return true
	}
	ownPid, _ := ownNS()
	if pidNS == ownPid {
		return false
	}
	sup := supervisor()
	if sup <= 0 {
		return true
	}
	runNS, err := nsOf("/proc/" + strconv.Itoa(sup) + "/ns/pid")
	if err != nil {
		return true
	}
	// Walk up from the peer's pid namespace to the host's.
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/ns/pid", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return true
	}
	for range 33 {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil {
			break
		}
		id := nsID{uint64(st.Dev), st.Ino}
		if id == runNS {
			unix.Close(fd)
			return false
		}
		if id == ownPid {
			break
		}
		parent, err := unix.IoctlRetInt(fd, nsGetParent)
		unix.Close(fd)
		if err != nil {
			return true
		}
		fd = parent
	}
	unix.Close(fd)
	return true
}

// runOfPid finds the tine run whose cgroup holds pid, "" for none, or
// unknownRun when its cgroups cannot be read.
func runOfPid(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return unknownRun
	}
	for _, line := range strings.Split(string(b), "\n") {
		i := strings.Index(line, "/tine/")
		if i < 0 {
			continue
		}
		id := strings.SplitN(line[i+len("/tine/"):], "/", 2)[0]
		if tine.LooksLikeID(tine.PrefixRun, id) {
			return id
		}
	}
	return ""
}
