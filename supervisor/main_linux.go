package supervisor

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/tinehq/tine/confine"
	"github.com/tinehq/tine/egress"
	"github.com/tinehq/tine/internal/mnt"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Main is the supervisor process: it sets up the run's namespaces, then
// serves its socket until told to stop. It never returns.
func Main() {
	if confine.IsWrapper() {
		confine.Main()
	}
	if isWatchdog() {
		watchdogMain()
	}
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	status := os.NewFile(3, "status")
	gate := os.NewFile(4, "gate")
	var spec Spec
	if err := json.Unmarshal([]byte(os.Getenv(specEnv)), &spec); err != nil {
		failStart(status, fmt.Errorf("bad supervisor spec: %w", err))
	}
	os.Unsetenv(specEnv)
	if spec.Hide != nil && len(spec.Hide.Writable) > 0 { // its view goes read-only, its own directory too
		dir, err := privateDir(spec.Dir)
		if err != nil {
			failStart(status, err)
		}
		spec.Dir = dir
	}
	syscall.CloseOnExec(hostMountsFD) // never inherited by the run's processes
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		failStart(status, fmt.Errorf("making mounts private: %w", err))
	}
	hm, err := newHostMounts(os.NewFile(hostMountsFD, "host-mountinfo"), spec.Workspace)
	if err != nil {
		log.Printf("not following the host's unmounts: %v", err)
	}
	if err := enterNamespaces(spec); err != nil {
		failStart(status, err)
	}
	hn, err := openHostNet(spec)
	if err != nil {
		failStart(status, err)
	}
	flush, res, err := confineNetwork(spec, hn)
	if err != nil {
		failStart(status, err)
	}
	hp, err := forwardHostPorts(spec, hn)
	if err != nil {
		failStart(status, err)
	}
	fmt.Fprintln(status, "up")
	if line, err := bufio.NewReader(gate).ReadString('\n'); err != nil || line != "go\n" {
		log.Printf("launcher went away before setup finished")
		os.Exit(1)
	}
	gate.Close()
	ln, err := listen(spec.Dir)
	if err != nil {
		failStart(status, err)
	}
	s := newServer(spec, ln)
	s.flushRefusals, s.hostPorts, s.resolver = flush, hp, res
	if hm != nil {
		go hm.follow()
	}
	fmt.Fprintln(status, "ok")
	status.Close()
	log.Printf("supervising run %s (%s)", spec.Run, spec.Hostname)
	s.serve()
}

func failStart(status *os.File, err error) {
	fmt.Fprintf(status, "error: %v\n", err)
	log.Print(err)
	os.Exit(1)
}

// enterNamespaces puts the run's files at the workspace path (its mounts
// made private before), mounts a /proc of the run's pid namespace and
// names the host after the run.
func enterNamespaces(spec Spec) error {
	if spec.View != "" {
		if err := mnt.Bind(spec.View, spec.Workspace); err != nil {
			return fmt.Errorf("mounting the run's files: %w", err)
		}
	}
	if err := mountControl(spec); err != nil {
		return fmt.Errorf("mounting tine's control plane at %s: %w", RunDir, err)
	}
	hidden, others, err := hideState(spec)
	if err != nil {
		return fmt.Errorf("confining the run's mounts: %w", err)
	}
	WriteConfinement(spec.Dir, spec.Confine, hidden, others) // for tine ps
	if err := hideSecrets(spec); err != nil {
		return fmt.Errorf("hiding the run's secret files: %w", err)
	}
	// The host's /proc is detached before the run's is mounted, so that
	// root in a source, which may unmount, finds nothing of it beneath.
	// A live fork into another run reaches that run's namespaces through
	// ExposeNamespace, for the time of the fork.
	if err := unix.Unmount("/proc", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the host's /proc: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mounting /proc: %w", err)
	}
	if err := unix.Sethostname([]byte(spec.Hostname)); err != nil {
		return fmt.Errorf("setting the hostname: %w", err)
	}
	if spec.Net {
		if err := loopbackUp(); err != nil {
			return fmt.Errorf("bringing up the loopback interface: %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("becoming a subreaper: %w", err)
	}
	return nil
}

// confineNetwork puts spec.Egress in force in the run's network (nothing
// when it has none), its resolver asking upstream from the host's (hn),
// and returns what records the last refusals at stop.
func confineNetwork(spec Spec, hn *hostNet) (flush func(), res *egress.Resolver, err error) {
	if spec.Egress == nil {
		return func() {}, nil, nil
	}
	if !spec.Net {
		return nil, nil, fmt.Errorf("an egress policy needs the run's own network namespace")
	}
	if flush, res, err = startEgress(spec, hn); err != nil {
		return nil, nil, fmt.Errorf("confining the run's network: %w", err)
	}
	return flush, res, nil
}

func listen(dir string) (*net.UnixListener, error) {
	path := SocketPath(dir)
	os.Remove(path)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listening: %w", err)
	}
	ln.SetUnlinkOnClose(false)
	return ln, os.Chmod(path, 0o600)
}

// watchSignals stops the run gracefully on SIGTERM, SIGINT or SIGHUP.
func (s *server) watchSignals() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	go func() {
		sig := <-ch
		log.Printf("%v: stopping", sig)
		s.stop(defaultGrace)
		os.Exit(0)
	}()
}

// loopbackUp brings up lo in the run's new network namespace.
func loopbackUp() error {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return err
	}
	return netlink.LinkSetUp(lo)
}

// mountControl gives the run a private tmpfs at RunDir (hiding the host's)
// holding the run's capability directory (cap), where the daemon serves the
// run's own socket, ctl pointing at it, and the tine binary; and it hides
// the people's socket directory (spec.Control) under an empty tmpfs. That
// is a first obstacle only (root in the run can unmount it): the daemon's
// people's socket refuses processes in a run's namespaces in any case.
func mountControl(spec Spec) error {
	if spec.Control == "" && spec.CapDir == "" && spec.Binary == "" {
		return nil
	}
	if err := os.MkdirAll(RunDir, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", RunDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m"); err != nil {
		return err
	}
	if spec.CapDir != "" {
		if err := os.MkdirAll(spec.CapDir, 0o700); err != nil {
			return err
		}
		dst := filepath.Join(RunDir, "cap")
		if err := os.Mkdir(dst, 0o700); err != nil {
			return err
		}
		if err := mnt.Bind(spec.CapDir, dst); err != nil {
			return err
		}
		if err := os.Symlink("cap", filepath.Join(RunDir, "ctl")); err != nil {
			return err
		}
	}
	if spec.Control != "" {
		if err := os.MkdirAll(spec.Control, 0o700); err != nil {
			return err
		}
		if err := unix.Mount("tmpfs", spec.Control, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC|unix.MS_RDONLY, "mode=0,size=4k"); err != nil {
			return fmt.Errorf("hiding the people's socket: %w", err)
		}
	}
	if spec.Binary == "" {
		return nil
	}
	bin := filepath.Join(RunDir, "bin", "tine")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(bin, nil, 0o755); err != nil {
		return err
	}
	return unix.Mount(spec.Binary, bin, "", unix.MS_BIND|unix.MS_RDONLY, "")
}

// hideSecrets covers each secret file of a fork with an empty one
// (/dev/null) and each secret directory with an empty read-only tmpfs, in
// the run's mount namespace only. What does not exist is skipped.
func hideSecrets(spec Spec) error {
	if spec.Secrets == nil {
		return nil
	}
	return emptySecrets(spec.Secrets.Files)
}

// emptySecrets shows each of paths empty: a file as /dev/null, a directory
// as an empty read-only tmpfs; missing ones are left.
func emptySecrets(paths []string) error {
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		if fi.IsDir() {
			err = unix.Mount("tmpfs", p, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=0700")
		} else {
			err = mnt.Bind("/dev/null", p)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}
