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
//
// A mount's ID is reused once the mount is gone, by any new mount: a copy
// is known by its ID and what it mounts (filesystem, root, point), and
// one whose ID now names another mount (the run's own /tmp, say) is no
// longer followed, never unmounted in its stead.
type hostMounts struct {
	host      *os.File
	workspace string
	toRun     map[int]mnt.Info
}

// hostMountsFD is the launcher's mountinfo, inherited after status and gate.
const hostMountsFD = 5

// newHostMounts pairs the host's mounts with this namespace's copies. It
// must run once this namespace's mounts are private (no unmount of the
// host's takes a copy along after it paired them) and before the run
// mounts anything.
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
func pairMounts(host, own []mnt.Info) map[int]mnt.Info {
	copies := map[string][]mnt.Info{}
	for _, m := range own {
		copies[mountKey(m)] = append(copies[mountKey(m)], m)
	}
	pairs := map[int]mnt.Info{}
	for _, m := range host {
		if q := copies[mountKey(m)]; len(q) > 0 {
			pairs[m.ID] = q[0]
			copies[mountKey(m)] = q[1:]
		}
	}
	return pairs
}

// mountKey is what a mount mounts: its filesystem, root and point.
func mountKey(m mnt.Info) string { return m.Dev + "\x00" + m.Root + "\x00" + m.Point }

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
	var gone []mnt.Info
	for hid, copied := range h.toRun {
		if !present[hid] {
			gone = append(gone, copied)
			delete(h.toRun, hid)
		}
	}
	if len(gone) == 0 {
		return
	}
	sort.Slice(gone, func(i, j int) bool { return gone[i].ID < gone[j].ID })
	for _, copied := range gone {
		h.release(copied)
	}
}

// release unmounts the run's copy of a mount the host unmounted, read
// afresh (an unmount before may have taken it along), if it is still
// there and nothing of the run's own is mounted over it.
func (h *hostMounts) release(copied mnt.Info) {
	own, err := ownMounts()
	if err != nil {
		log.Printf("reading the run's mounts: %v", err)
		return
	}
	point, ok := h.releasable(own, copied)
	if !ok {
		return
	}
	if err := unix.Unmount(point, unix.MNT_DETACH); err != nil {
		log.Printf("the host unmounted %s; unmounting it here: %v", point, err)
		return
	}
	log.Printf("the host unmounted %s; unmounted here too", point)
}

// releasable says whether the copy is to be unmounted, and where: not when
// it is gone, or its ID names another mount now, or it lies at or beneath
// the workspace path, or the run mounted something of its own over it.
func (h *hostMounts) releasable(own []mnt.Info, copied mnt.Info) (string, bool) {
	var m *mnt.Info
	for i := range own {
		if own[i].ID == copied.ID && mountKey(own[i]) == mountKey(copied) {
			m = &own[i]
		}
	}
	if m == nil || h.beneathWorkspace(m.Point) {
		return "", false
	}
	for _, o := range own {
		if o.Parent == m.ID && o.Point == m.Point {
			log.Printf("the host unmounted %s; kept here under the run's own mount", m.Point)
			return "", false
		}
	}
	return m.Point, true
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
