package livefork

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// The child's scratch page: a path at offset 0, an int and a sockaddr after.
const (
	scratchSize = 2 * 4096
	intOffset   = 4096
	addrOffset  = 4096 + 64
	dropFlags   = unix.O_CREAT | unix.O_EXCL | unix.O_TRUNC | unix.O_NOCTTY
	logFlags    = unix.O_WRONLY | unix.O_CREAT | unix.O_APPEND | unix.O_CLOEXEC
)

// injector runs system calls in a stopped child on top of the parent's
// saved registers, with a scratch page mapped in the child for arguments.
type injector struct {
	t       *tracee
	regs    *unix.PtraceRegs
	scratch uint64
}

// setup turns the stopped child into the fork's process and detaches it:
// cgroups, scratch page, namespaces, cwd, descriptors, logs, confinement,
// registers.
func (p *childPlan) setup(t Target) error {
	c := p.child
	if err := c.stopUntil(isInterrupt, c.cont); err != nil {
		return fmt.Errorf("livefork: child %d: %w", c.pid, err)
	}
	for _, procs := range t.CgroupProcs {
		if err := writeProcs(procs, c.pid); err != nil {
			return err
		}
	}
	socks, err := inspectSockets(c.pid, p.fds)
	if err != nil {
		return fmt.Errorf("livefork: child %d: %w", c.pid, err)
	}
	in := &injector{t: c, regs: &p.regs}
	if err := in.run(p, t, socks); err != nil {
		return fmt.Errorf("livefork: child %d: %w", c.pid, err)
	}
	return c.restore(&p.regs)
}

func (in *injector) run(p *childPlan, t Target, socks map[int]sockInfo) error {
	var err error
	in.scratch, err = in.call("mmap scratch page", unix.SYS_MMAP, 0, scratchSize,
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS, sx(-1), 0)
	if err != nil {
		return err
	}
	if err := in.enter(t); err != nil {
		return err
	}
	if err := in.chdir(p.cwd); err != nil {
		return err
	}
	if err := in.reopenAll(p.fds, t, socks); err != nil {
		return err
	}
	if err := in.logs(t.Stdout, t.Stderr); err != nil {
		return err
	}
	if err := in.confine(t.Confine); err != nil {
		return fmt.Errorf("confining the copy as the fork's processes are: %w", err)
	}
	_, err = in.call("munmap scratch page", unix.SYS_MUNMAP, in.scratch, scratchSize)
	return err
}

// call injects one system call; op names it in the error.
func (in *injector) call(op string, nr uintptr, args ...uint64) (uint64, error) {
	r, err := in.t.syscall(in.regs, nr, args...)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	return r, nil
}

// str writes s, NUL-terminated, at the start of the scratch page.
func (in *injector) str(s string) (uint64, error) {
	if len(s) >= intOffset {
		return 0, fmt.Errorf("path of %d bytes is too long", len(s))
	}
	return in.scratch, in.t.poke(in.scratch, append([]byte(s), 0))
}

func (in *injector) open(path string, flags int, mode uint32) (uint64, error) {
	addr, err := in.str(path)
	if err != nil {
		return 0, err
	}
	return in.call("open "+path, unix.SYS_OPENAT, sx(unix.AT_FDCWD), addr, uint64(flags), uint64(mode))
}

// enter joins the target's mount and, if given, network namespace. setns
// into a mount namespace also moves root and cwd to the namespace's root.
func (in *injector) enter(t Target) error {
	if err := in.setns(t.MountNS, unix.CLONE_NEWNS); err != nil {
		return err
	}
	if t.NetNS == "" {
		return nil
	}
	return in.setns(t.NetNS, unix.CLONE_NEWNET)
}

func (in *injector) setns(path string, kind uint64) error {
	fd, err := in.open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if _, err := in.call("setns "+path, unix.SYS_SETNS, fd, kind); err != nil {
		return err
	}
	return in.close(fd)
}

func (in *injector) close(fd uint64) error {
	_, err := in.call("close", unix.SYS_CLOSE, fd)
	return err
}

func (in *injector) chdir(dir string) error {
	addr, err := in.str(dir)
	if err != nil {
		return err
	}
	_, err = in.call("chdir "+dir, unix.SYS_CHDIR, addr)
	return err
}

// moveFD puts from on descriptor to with dup3 and closes from.
func (in *injector) moveFD(from uint64, to, flags int) error {
	if _, err := in.call("dup3 onto fd "+strconv.Itoa(to), unix.SYS_DUP3, from, uint64(to), uint64(flags&unix.O_CLOEXEC)); err != nil {
		return err
	}
	return in.close(from)
}

func (in *injector) reopenAll(fds []fdPlan, t Target, socks map[int]sockInfo) error {
	for _, f := range fds {
		if (f.fd == 1 && t.Stdout != "") || (f.fd == 2 && t.Stderr != "") {
			continue // replaced by the log
		}
		var err error
		if si, ok := socks[f.fd]; ok {
			err = in.relisten(f, si)
		} else if f.path != "" {
			err = in.reopen(f)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// reopen opens a workspace file again, in the fork's namespace, with the
// same flags and at the same offset, on the same descriptor number.
func (in *injector) reopen(f fdPlan) error {
	flags := f.info.flags &^ dropFlags
	fd, err := in.open(f.path, flags, 0)
	if err != nil {
		return err
	}
	if f.info.pos != 0 && flags&unix.O_APPEND == 0 {
		if _, err := in.call("lseek "+f.path, unix.SYS_LSEEK, fd, uint64(f.info.pos), unix.SEEK_SET); err != nil {
			return err
		}
	}
	return in.moveFD(fd, f.fd, flags)
}

// relisten creates a listening socket like the original, in the child's
// (new) network namespace, on the same descriptor number.
func (in *injector) relisten(f fdPlan, si sockInfo) error {
	typ := uint64(unix.SOCK_STREAM | f.info.flags&(unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC))
	s, err := in.call("socket", unix.SYS_SOCKET, uint64(si.domain), typ, unix.IPPROTO_TCP)
	if err != nil {
		return err
	}
	if err := in.setsockopt(s, unix.SOL_SOCKET, unix.SO_REUSEADDR); err != nil {
		return err
	}
	if si.v6only {
		if err := in.setsockopt(s, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY); err != nil {
			return err
		}
	}
	if err := in.bind(s, si); err != nil {
		return err
	}
	if _, err := in.call("listen", unix.SYS_LISTEN, s, uint64(si.backlog)); err != nil {
		return err
	}
	return in.moveFD(s, f.fd, f.info.flags)
}

// setsockopt sets an int option to 1.
func (in *injector) setsockopt(s uint64, level, opt int) error {
	if err := in.t.poke(in.scratch+intOffset, binary.LittleEndian.AppendUint32(nil, 1)); err != nil {
		return err
	}
	_, err := in.call("setsockopt", unix.SYS_SETSOCKOPT, s, uint64(level), uint64(opt), in.scratch+intOffset, 4)
	return err
}

func (in *injector) bind(s uint64, si sockInfo) error {
	sa := si.rawSockaddr()
	if err := in.t.poke(in.scratch+addrOffset, sa); err != nil {
		return err
	}
	_, err := in.call("bind", unix.SYS_BIND, s, in.scratch+addrOffset, uint64(len(sa)))
	if errors.Is(err, unix.EADDRINUSE) {
		return fmt.Errorf("listener on :%d needs the fork's own network namespace: %w", si.port(), err)
	}
	return err
}

// logs opens the child's log files and puts them on descriptors 1 and 2.
func (in *injector) logs(stdout, stderr string) error {
	if stdout != "" {
		targets := []int{1}
		if stderr == stdout {
			targets = append(targets, 2)
		}
		if err := in.redirect(stdout, targets...); err != nil {
			return err
		}
	}
	if stderr != "" && stderr != stdout {
		return in.redirect(stderr, 2)
	}
	return nil
}

func (in *injector) redirect(path string, fds ...int) error {
	fd, err := in.open(path, logFlags, 0o644)
	if err != nil {
		return err
	}
	for _, n := range fds {
		if _, err := in.call("dup3 log onto fd "+strconv.Itoa(n), unix.SYS_DUP3, fd, uint64(n), 0); err != nil {
			return err
		}
	}
	return in.close(fd)
}

// inspectSockets reads the child's listening sockets (Check has refused
// every other kind) through pidfd_getfd.
func inspectSockets(pid int, fds []fdPlan) (map[int]sockInfo, error) {
	socks := map[int]sockInfo{}
	pidfd := -1
	for _, f := range fds {
		if f.path != "" {
			continue
		}
		if pidfd < 0 {
			var err error
			if pidfd, err = unix.PidfdOpen(pid, 0); err != nil {
				return nil, fmt.Errorf("pidfd_open: %w", err)
			}
			defer unix.Close(pidfd)
		}
		si, err := inspectSocket(pidfd, f.fd)
		if err != nil {
			return nil, err
		}
		if !si.isTCPListener() {
			return nil, fmt.Errorf("%s on fd %d cannot be re-created", si.describe(), f.fd)
		}
		socks[f.fd] = si
	}
	return socks, nil
}

// writeProcs moves pid into a cgroup by writing to its cgroup.procs file.
func writeProcs(path string, pid int) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("livefork: cgroup: %w", err)
	}
	_, err = f.WriteString(strconv.Itoa(pid))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("livefork: move %d to %s: %w", pid, path, err)
	}
	return nil
}
