package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// ExposeNamespaces makes the namespace files of host process pid
// (/proc/PID/ns) openable inside the run of the supervisor of dir (host
// pid sup), in the returned directory, below a directory of the run's
// supervisor directory that only root enters. Runs do not see the host's
// /proc: a process of this run forked live into another run opens that
// run's namespaces here. remove takes them away again.
//
// The directory is bound, not a namespace file: the kernel refuses
// (ELOOP) a bind of a mount namespace's file into a namespace whose id
// is not lower, and mount namespace ids are not in creation order (they
// are handed out per CPU).
func ExposeNamespaces(dir string, sup, pid int) (nsDir string, remove func() error, err error) {
	tree, err := unix.OpenTree(unix.AT_FDCWD, fmt.Sprintf("/proc/%d/ns", pid), unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return "", nil, fmt.Errorf("exposing the namespaces of process %d: %w", pid, err)
	}
	defer unix.Close(tree)
	holder := filepath.Join(dir, exposedName)
	nsDir = filepath.Join(holder, strconv.Itoa(pid))
	if err := os.Mkdir(holder, 0o700); err != nil && !os.IsExist(err) {
		return "", nil, err
	}
	cleanup := func() {
		os.Remove(nsDir)
		os.Remove(holder) // fails while other forks' are there
	}
	if err := os.Mkdir(nsDir, 0o700); err != nil {
		cleanup()
		return "", nil, err
	}
	err = inMountNS(sup, func() error {
		return unix.MoveMount(tree, "", unix.AT_FDCWD, nsDir, unix.MOVE_MOUNT_F_EMPTY_PATH)
	})
	if err != nil {
		cleanup()
		return "", nil, fmt.Errorf("exposing the namespaces of process %d in the run of %d: %w", pid, sup, err)
	}
	remove = func() error {
		err := inMountNS(sup, func() error { return unix.Unmount(nsDir, unix.MNT_DETACH) })
		cleanup()
		return err
	}
	return nsDir, remove, nil
}

// exposedName is the directory of a supervisor's directory where
// ExposeNamespaces puts namespaces.
const exposedName = "livefork-ns"

// inMountNS runs f on an OS thread of its own in the mount namespace of
// process pid. The thread is never given back (it is not unlocked), so
// the Go runtime ends it with f's goroutine.
func inMountNS(pid int, f func() error) error {
	ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/mnt", pid))
	if err != nil {
		return err
	}
	defer ns.Close()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_FS); err != nil { // setns(CLONE_NEWNS) wants an fs of the thread's own
			done <- err
			return
		}
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNS); err != nil {
			done <- err
			return
		}
		done <- f()
	}()
	return <-done
}
