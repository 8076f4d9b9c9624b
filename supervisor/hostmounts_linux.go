package supervisor

import (
	"io"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tinehq/tine/internal/mnt"
	"golang.org/x/sys/unix"
)

// hostMounts makes a run let go of the host's filesystems when the host
// unmounts them. A run's mount namespace starts as a private copy of the
// host's, so without this a USB disk, a loop image or a network share
// mounted when the run started stays mounted (and busy) inside it for as
// long as the run lives. Propagation would do it only where the host's
// mounts are shared (and would also bring every later host mount into
// runs); following the host's table works whatever the host's propagation.
//
// host is the host namespace's mountinfo, opened by the launcher and
// inherited: the open file keeps reading the namespace it was opened in.
// toRun pairs each host mount with the run's copy of it, made before the
// run mounted anything of its own. Mounts at or beneath the workspace path
// are never followed: what the run sees there is tine's business (its
// view, or the source view it runs on), and tine changes it itself.
type hostMounts struct {
	host      *os.File
	workspace string
	toRun     map[int]int
}

// hostMountsFD is the launcher's mountinfo, inherited after status and gate.
const hostMountsFD = 5

// newHostMounts pairs the host's mounts with this namespace's copies. It
// must run before the run mounts anything.
func newHostMounts(host *os.File, workspace string) (*hostMounts, error) {
	hs, err := readMountinfo(host)
	if err != nil {
		return nil, err
	}
	own, err := ownMounts()
	if err != nil {
		return nil, err
	}
	return &hostMounts{host: host, workspace: filepath.Clean(workspace), toRun: pairMounts(hs, own)}, nil
}

// pairMounts matches each host mount with its copy: same filesystem, same
// root and mount point, in the same order (a namespace copy keeps both).
func pairMounts(host, own []mnt.Info) map[int]int {
	key := func(m mnt.Info) string { return m.Dev + "\x00" + m.Root + "\x00" + m.Point }
	copies := map[string][]int{}
	for _, m := range own {
		copies[key(m)] = append(copies[key(m)], m.ID)
	}
	pairs := map[int]int{}
	for _, m := range host {
		if q := copies[key(m)]; len(q) > 0 {
			pairs[m.ID] = q[0]
			copies[key(m)] = q[1:]
		}
	}
	return pairs
}

// follow waits for changes of the host's mount table and applies its
// unmounts here. It never returns.
func (h *hostMounts) follow() {
	for {
		waitMountChange(h.host, 30*time.Second)
		h.sync()
	}
}

// sync unmounts here (lazily) the copy of every host mount that is gone,
// unless the run covers it with a mount of its own.
func (h *hostMounts) sync() {
	hs, err := readMountinfo(h.host)
	if err != nil {
		log.Printf("reading the host's mounts: %v", err)
		return
	}
	present := map[int]bool{}
	for _, m := range hs {
		present[m.ID] = true
	}
	var gone []int
	for hid, rid := range h.toRun {
		if !present[hid] {
			gone = append(gone, rid)
			delete(h.toRun, hid)
		}
	}
	if len(gone) == 0 {
		return
	}
	sort.Ints(gone)
	for _, rid := range gone {
		h.release(rid)
	}
}

// release unmounts the run's mount rid, read afresh (an unmount before may
// have taken it along), if nothing of the run's own is mounted over it.
func (h *hostMounts) release(rid int) {
	own, err := ownMounts()
	if err != nil {
		log.Printf("reading the run's mounts: %v", err)
		return
	}
	var m *mnt.Info
	for i := range own {
		if own[i].ID == rid {
			m = &own[i]
		}
	}
	if m == nil || h.beneathWorkspace(m.Point) {
		return
	}
	for _, o := range own {
		if o.Parent == rid && o.Point == m.Point {
			log.Printf("the host unmounted %s; kept here under the run's own mount", m.Point)
			return
		}
	}
	if err := unix.Unmount(m.Point, unix.MNT_DETACH); err != nil {
		log.Printf("the host unmounted %s; unmounting it here: %v", m.Point, err)
		return
	}
	log.Printf("the host unmounted %s; unmounted here too", m.Point)
}

func (h *hostMounts) beneathWorkspace(point string) bool {
	return point == h.workspace || strings.HasPrefix(point, h.workspace+"/")
}

// waitMountChange returns when the mount table f reads changes (the kernel
// signals POLLPRI on it), or after timeout.
func waitMountChange(f *os.File, timeout time.Duration) {
	fds := []unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLPRI | unix.POLLERR}}
	start := time.Now()
	for {
		_, err := unix.Poll(fds, int(timeout/time.Millisecond))
		switch {
		case err == nil || time.Since(start) >= timeout:
			return
		case err != unix.EINTR: // not pollable: fall back to the timeout
			time.Sleep(timeout)
			return
		}
	}
}

func readMountinfo(f *os.File) ([]mnt.Info, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	return mnt.ParseInfo(f)
}

func ownMounts() ([]mnt.Info, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return mnt.ParseInfo(f)
}
