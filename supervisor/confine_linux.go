package supervisor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/tinehq/tine/fstree"

	"github.com/tinehq/tine/confine"
	"github.com/tinehq/tine/internal/mnt"
	"golang.org/x/sys/unix"
)

// spawn starts a process of the run: through the confining wrapper when
// the run is confined, so Landlock and seccomp hold from its first
// instruction. Every process of a run starts here.
func (s *server) spawn(path string, args []string, attr *os.ProcAttr) (int, <-chan syscall.WaitStatus, error) {
	return s.spawnAt(path, args, attr, 0)
}

// spawnAt is spawn with the pid want asked for (see Service.Pid).
func (s *server) spawnAt(path string, args []string, attr *os.ProcAttr, want int) (int, <-chan syscall.WaitStatus, error) {
	if s.spec.Confine != nil {
		wpath, wargs, env, err := confine.Command(*s.spec.Confine, path, args)
		if err != nil {
			return 0, nil, err
		}
		a := *attr
		a.Env = append(append([]string(nil), attr.Env...), env)
		path, args, attr = wpath, wargs, &a
	}
	return s.reaper.spawn(path, args, attr, want)
}

// hideState covers, in the run's mount namespace, tine's state directory
// (every other run's files and capability, the store) but the run's own
// directory, and every other workspace, with empty read-only tmpfs mounts;
// a fork also gets a /tmp of its own (keeping what of the workspace path
// and the state directory lies below /tmp). It reports what it hid.
func hideState(spec Spec) (hidden []string, others int, err error) {
	return Cover(spec.Workspace, spec.Hide)
}

// Cover does what h says in the calling process's mount namespace, which
// must be its own (a supervisor's, or that of tine exec's sandbox without
// root, in a user namespace): covers the state directory but the run's
// own directory, other workspaces and h.Private; gives the run a /tmp,
// /var/tmp and home of its own; hides the kernel log. workspace is where
// the run's files are; the layers of its own temporary directories are
// kept on a tmpfs mounted below RunDir, or h.Scratch when set. It reports
// what it hid.
func Cover(workspace string, h *Hide) (hidden []string, others int, err error) {
	if h == nil {
		return nil, 0, nil
	}
	scratch := RunDir
	if h.Scratch != "" {
		scratch = h.Scratch
	}
	if h.Run {
		if err := coverKeeping("/run", runKept(), "size=64k,mode=0755", true); err != nil {
			return nil, 0, fmt.Errorf("hiding /run: %w", err)
		}
		hidden = append(hidden, "/run")
	}
	if h.Tmp {
		for _, d := range tmpDirs {
			if err := privateTmp(d, []string{workspace, h.State}, scratch, h.Ephemeral); err != nil {
				return nil, 0, fmt.Errorf("a %s of the run's own: %w", d, err)
			}
		}
	}
	if h.Home != "" && h.HomeLayer != "" {
		if err := privateHome(workspace, h); err != nil {
			return nil, 0, fmt.Errorf("a home of the run's own: %w", err)
		}
	}
	if h.State != "" && !fstree.Within(workspace, h.State) {
		if err := coverKeeping(h.State, []string{h.Keep}, "size=64k,mode=0755", true); err != nil {
			return nil, 0, fmt.Errorf("hiding %s: %w", h.State, err)
		}
		hidden = append(hidden, h.State)
	}
	if h.Dev {
		if err := privateDev(); err != nil {
			return nil, 0, fmt.Errorf("a /dev of the run's own: %w", err)
		}
		hidden = append(hidden, "/dev")
	}
	// The kernel's log is the host's (seccomp denies syslog(2); this is
	// the other way to read it).
	if _, err := os.Stat("/dev/kmsg"); err == nil {
		if err := mnt.Bind("/dev/null", "/dev/kmsg"); err != nil {
			return nil, 0, fmt.Errorf("hiding /dev/kmsg: %w", err)
		}
		hidden = append(hidden, "/dev/kmsg")
	}
	otherPaths, err := coverEach(h.Paths, workspace)
	if err != nil {
		return nil, 0, err
	}
	if err := emptySecrets(h.Secrets); err != nil {
		return nil, 0, fmt.Errorf("hiding the run's secret files: %w", err)
	}
	private, err := coverEach(h.Private, workspace)
	if err != nil {
		return nil, 0, err
	}
	hidden = append(hidden, private...)
	if len(h.Writable) > 0 {
		writable := slices.Clone(h.Writable)
		if h.Dev {
			writable = append(writable, "/dev/shm") // a mount of its own below /dev
		}
		if err := readOnlyBut(writable); err != nil {
			return nil, 0, fmt.Errorf("making the host's files read-only: %w", err)
		}
	}
	return hidden, len(otherPaths), nil
}

// coverEach covers each of paths with an empty read-only tmpfs, but those
// missing and those that hold the workspace or lie in it, and returns
// those it covered.
func coverEach(paths []string, workspace string) ([]string, error) {
	var covered []string
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil || fstree.Within(workspace, p) || fstree.Within(p, workspace) {
			continue
		}
		if err := coverKeeping(p, nil, "size=4k,mode=0755", true); err != nil {
			return nil, fmt.Errorf("hiding %s: %w", p, err)
		}
		covered = append(covered, p)
	}
	return covered, nil
}

// readOnlyBut makes every mount of the calling process's mount namespace
// read-only, but the mounts at the paths of writable (a path that is not
// a mount's root is bound onto itself first, so that it is one); a mount
// below one of them that is not itself listed stays read-only. Missing
// paths are skipped.
func readOnlyBut(writable []string) error {
	var roots []string
	for _, p := range writable {
		if p == "" || !filepath.IsAbs(p) {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			continue
		}
		if root, _ := mnt.IsMountpoint(p); !root {
			if err := mnt.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
		}
		roots = append(roots, p)
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return err
	}
	for _, p := range roots { // each alone: what is mounted below one (the state directory below /tmp) stays read-only
		if err := unix.MountSetattr(unix.AT_FDCWD, p, 0, &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// privateDir returns a path to dir through a mount of its own, detached
// from the mount tree (open_tree's clone), so that it stays writable when
// readOnlyBut makes the whole tree read-only: the supervisor writes its
// files there (its socket, confinement, egress records) while the run's
// processes, which cannot reach the descriptor, see dir read-only.
func privateDir(dir string) (string, error) {
	fd, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return "", fmt.Errorf("a mount of its own for %s: %w", dir, err)
	}
	return "/proc/self/fd/" + strconv.Itoa(fd), nil
}

// runKept are the directories of /run a run keeps when the rest is
// covered: tine's RunDir (the supervisor's control plane, mounted before)
// and where /etc/resolv.conf points (systemd-resolved's stub), those that
// exist.
func runKept() []string {
	var out []string
	for _, d := range []string{RunDir, resolvDir()} {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() && fstree.Within(d, "/run") {
			out = append(out, d)
		}
	}
	return out
}

// resolvDir is the directory of what /etc/resolv.conf resolves to.
func resolvDir() string {
	p, err := filepath.EvalSymlinks("/etc/resolv.conf")
	if err != nil {
		return ""
	}
	return filepath.Dir(p)
}

// devNodes are the device nodes a run's own /dev holds, bound from the
// host's: those programs open by name. No disk, loop, console, tty of the
// host's (tty is the process's own terminal), tun or fuse device.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty", "ptmx"}

// privateDev mounts a /dev of the run's own over the host's: a tmpfs with
// devNodes and the host's pts bound in (opened before the cover, through
// O_PATH descriptors), a private shm, and the fd links. A fork writing to
// /dev (which Landlock lets it, for these nodes) reaches nothing of the
// host's: a root fork could write a disk's or a loop device's blocks
// beneath every mount, and /dev/shm is shared with the host's processes.
func privateDev() error {
	if fi, err := os.Lstat("/dev"); err != nil || !fi.IsDir() {
		return nil
	}
	type node struct {
		name string
		fd   int
		dir  bool
	}
	var nodes []node
	defer func() {
		for _, n := range nodes {
			unix.Close(n.fd)
		}
	}()
	for _, name := range append(slices.Clone(devNodes), "pts") {
		fd, err := unix.Open("/dev/"+name, unix.O_PATH|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			continue // not on this host
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil {
			unix.Close(fd)
			continue
		}
		nodes = append(nodes, node{name, fd, st.Mode&unix.S_IFMT == unix.S_IFDIR})
	}
	if err := unix.Mount("tmpfs", "/dev", "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
		return err
	}
	for _, n := range nodes {
		p := "/dev/" + n.name
		if n.dir {
			if err := os.Mkdir(p, 0o755); err != nil {
				return err
			}
		} else if err := os.WriteFile(p, nil, 0o666); err != nil {
			return err
		}
		if err := bindFD(n.fd, p); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	if err := os.Mkdir("/dev/shm", 0o1777); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
		return fmt.Errorf("/dev/shm: %w", err)
	}
	for link, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"} {
		if err := os.Symlink(target, "/dev/"+link); err != nil {
			return err
		}
	}
	return nil
}

// tmpDirs are the temporary directories a fork gets its own of: /tmp, and
// /var/tmp, which programs pick by access(2) (SQLite does), which says yes
// where Landlock would refuse the write.
var tmpDirs = []string{"/tmp", "/var/tmp"}

// privateTmp puts an overlay on dir whose lower layer is the host's dir
// and whose upper layer is a tmpfs of the run's (below RunDir): the run
// sees what is there, and what it writes stays its own. What of keep lies
// below dir (mounts included) is bound back on top.
func privateTmp(dir string, keep []string, scratch string, ephemeral bool) error {
	if _, err := os.Stat(dir); err != nil {
		return nil
	}
	tmpScratch := scratch + "/." + strings.ReplaceAll(strings.Trim(dir, "/"), "/", "-")
	return keepingMounts(dir, keep, func() error {
		if err := os.MkdirAll(tmpScratch, 0o700); err != nil {
			return err
		}
		if err := unix.Mount("tmpfs", tmpScratch, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700"); err != nil {
			return err
		}
		for _, d := range []string{"upper", "work"} {
			if err := os.Mkdir(filepath.Join(tmpScratch, d), 0o1777); err != nil {
				return err
			}
		}
		os.Chmod(filepath.Join(tmpScratch, "upper"), 0o1777|os.ModeSticky)
		opts := "lowerdir=" + dir + ",upperdir=" + tmpScratch + "/upper,workdir=" + tmpScratch + "/work"
		if !ephemeral {
			return mnt.Mount("overlay", dir, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts)
		}
		// In a user namespace the host's dir may not be usable as a lower
		// layer (mounts below it are locked to it): then the run gets an
		// empty one of its own.
		if mnt.Mount("overlay", dir, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts+",userxattr") == nil {
			return nil
		}
		return unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777")
	})
}

// privateHome puts an overlay on the owner's home whose upper layer is
// h.HomeLayer/upper, owned as the home is; the workspace path and the
// state directory, where they lie below the home, are bound back on top.
func privateHome(workspace string, h *Hide) error {
	fi, err := os.Stat(h.Home)
	if err != nil || !fi.IsDir() || h.Home == "/" || fstree.Within(h.Home, workspace) {
		return nil // nothing to put a layer on
	}
	layer, userxattr := h.HomeLayer, ""
	if h.Ephemeral { // the layer lies in the home it covers: on a tmpfs of its own
		if err := os.MkdirAll(layer, 0o700); err != nil {
			return err
		}
		if err := unix.Mount("tmpfs", layer, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700"); err != nil {
			return err
		}
		userxattr = ",userxattr"
	}
	upper, work := filepath.Join(layer, "upper"), filepath.Join(layer, "work")
	for _, d := range []string{upper, work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	st := fi.Sys().(*syscall.Stat_t)
	if err := os.Chown(upper, int(st.Uid), int(st.Gid)); err != nil {
		return err
	}
	if err := os.Chmod(upper, fi.Mode().Perm()); err != nil {
		return err
	}
	err = keepingMounts(h.Home, []string{workspace, h.State}, func() error {
		opts := "lowerdir=" + h.Home + ",upperdir=" + upper + ",workdir=" + work + userxattr
		return mnt.Mount("overlay", h.Home, "overlay", unix.MS_NOSUID|unix.MS_NODEV, opts)
	})
	if !errors.Is(err, unix.EINVAL) || !h.Ephemeral {
		return err
	}
	// In a user namespace of its own the host's mounts are locked to what
	// they cover, and overlayfs may not take a directory with one below it
	// as its lower layer.
	if below := mountBelow(h.Home, workspace, h.State); below != "" {
		return fmt.Errorf("%s has a mount below it (%s), which a namespace of a normal user's may not lay a home over: "+
			"let the daemon run the fork (sudo tine setup daemon), or unmount it", h.Home, below)
	}
	return err
}

// mountBelow returns a mount point strictly below dir, other than the
// paths of keep and what lies below them; "" when there is none.
func mountBelow(dir string, keep ...string) string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	infos, _ := mnt.ParseInfo(f)
	for _, in := range infos {
		if in.Point == dir || !fstree.Within(in.Point, dir) {
			continue
		}
		if !slices.ContainsFunc(keep, func(k string) bool { return k != "" && fstree.Within(in.Point, k) }) {
			return in.Point
		}
	}
	return ""
}

// coverKeeping mounts an empty tmpfs (options data) on dir but keeps each
// of keep that lies below it where it is (keepingMounts); readonly makes
// the tmpfs read-only once that is done.
func coverKeeping(dir string, keep []string, data string, readonly bool) error {
	flags := uintptr(unix.MS_NOSUID | unix.MS_NODEV)
	err := keepingMounts(dir, keep, func() error { return unix.Mount("tmpfs", dir, "tmpfs", flags, data) })
	if err != nil || !readonly {
		return err
	}
	return unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY|flags, "")
}

// keepingMounts runs cover, which mounts something on dir, keeping each of
// keep that lies below dir where it is, mounts included: each is opened
// first, and after cover its path is made again and it is bound back there
// through its open descriptor.
func keepingMounts(dir string, keep []string, cover func() error) error {
	type kept struct {
		path string
		fd   int
	}
	var ks []kept
	defer func() {
		for _, k := range ks {
			unix.Close(k.fd)
		}
	}()
	for _, k := range keep {
		if k == "" || k == dir || !fstree.Within(k, dir) {
			continue
		}
		fd, err := unix.Open(k, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		ks = append(ks, kept{k, fd})
	}
	if err := cover(); err != nil {
		return err
	}
	for _, k := range ks {
		if err := os.MkdirAll(k.path, 0o755); err != nil {
			return err
		}
		if err := bindFD(k.fd, k.path); err != nil {
			return err
		}
	}
	return nil
}

// bindFD binds what the (O_PATH) descriptor fd opened onto path, mounts
// below it included.
func bindFD(fd int, path string) error {
	return mnt.Mount(fmt.Sprintf("/proc/self/fd/%d", fd), path, "", unix.MS_BIND|unix.MS_REC, "")
}
