package livefork

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tinehq/tine/confine"
)

// CRIUDump checkpoints the tree of s.Pid into s.Dir with criu, leaving it
// running. criu joins the namespaces of s.Namespaces first. An error from
// criu wraps ErrCRIUFailed with its reason; the source runs on either way.
func CRIUDump(ctx context.Context, s DumpSpec) (*Dump, error) {
	nspid, err := nsPid(s.Pid)
	if err != nil {
		return nil, err
	}
	ext, err := externalFiles(s.Pid, s.Hidden)
	if err != nil {
		return nil, err
	}
	args := []string{"dump", "-t", strconv.Itoa(nspid), "--leave-running", "--shell-job",
		"--tcp-established", "--network-lock", "skip", "--file-locks",
		"-D", "/proc/self/fd/3", "-o", "dump.log"}
	for _, e := range ext {
		args = append(args, "--external", e.Key)
	}
	for _, ino := range s.Sockets {
		args = append(args, "--external", fmt.Sprintf("unix[%d]", ino))
	}
	if s.FrozenCgroup != "" {
		args = append(args, "--freeze-cgroup", s.FrozenCgroup)
	}
	dir, err := os.Open(s.Dir)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	start := time.Now()
	err = runCRIU(ctx, s.Namespaces, nil, "", args, []*os.File{dir}, filepath.Join(s.Dir, "dump.log"))
	d := &Dump{Dir: s.Dir, Took: time.Since(start), External: ext, Sockets: s.Sockets}
	if err != nil {
		return nil, err
	}
	d.Pause = frozenTime(filepath.Join(s.Dir, "stats-dump"), d.Took)
	return d, nil
}

// ImagesDir makes a tmpfs of its own, mode 0700, for a Dump's images
// (they hold the tree's memory, secrets included), mounted at dir (made
// and removed, mode 0700) only for as long as it takes to open it: it is
// reached after by the returned path, /proc/self/fd/N, of this process's
// descriptor (criu gets a copy). remove closes it, and the kernel frees
// the tmpfs with its last descriptor: however tine ends, even killed mid
// dump, the images go with it and criu, and nothing is left mounted.
func ImagesDir(dir string) (string, func(), error) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", nil, fmt.Errorf("the CRIU images directory: %w", err)
	}
	defer os.Remove(dir)
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "mode=0700"); err != nil {
		return "", nil, fmt.Errorf("a tmpfs for the CRIU images: %w", err)
	}
	f, err := os.Open(dir)
	if uerr := syscall.Unmount(dir, syscall.MNT_DETACH); err == nil && uerr != nil {
		f.Close()
		err = uerr
	}
	if err != nil {
		return "", nil, fmt.Errorf("a tmpfs for the CRIU images: %w", err)
	}
	return fmt.Sprintf("/proc/self/fd/%d", f.Fd()), func() { f.Close() }, nil
}

// Restore restores d into the namespaces and cgroups r names. criu kills
// what it restored when it fails, so a failed restore leaves no tree; a
// tree that cannot be confined as r says is killed by Restore.
func (d *Dump) Restore(ctx context.Context, r RestoreSpec) (Restored, error) {
	imgs, err := os.Open(d.Dir)
	if err != nil {
		return Restored{}, err
	}
	defer imgs.Close()
	work, err := os.Open(r.WorkDir)
	if err != nil {
		return Restored{}, err
	}
	defer work.Close()
	files := []*os.File{imgs, work}
	var opened []*os.File // the fork's files opened here, not the caller's sockets
	defer func() {
		for _, f := range opened {
			f.Close()
		}
	}()
	args := []string{"restore", "-d", "--shell-job", "--tcp-close", "--manage-cgroups=ignore",
		"--file-locks", "-D", "/proc/self/fd/3", "-W", "/proc/self/fd/4", "-o", "restore.log", "--pidfile", "pid"}
	for _, e := range d.External {
		path, flag, err := r.Files(e)
		if err != nil {
			return Restored{}, err
		}
		f, err := os.OpenFile(path, flag|syscall.O_CLOEXEC, 0o644)
		if err != nil {
			return Restored{}, fmt.Errorf("the fork's file for fd %d of process %d: %w", e.FD, e.Pid, err)
		}
		files, opened = append(files, f), append(opened, f)
		args = append(args, "--inherit-fd", fmt.Sprintf("fd[%d]:%s", 2+len(files), e.Key))
	}
	for _, ino := range d.Sockets {
		sk := r.Sockets[ino]
		if sk == nil {
			return Restored{}, fmt.Errorf("%w: no socket of the fork for the unix socket %d", ErrCRIUFailed, ino)
		}
		files = append(files, sk)
		args = append(args, "--inherit-fd", fmt.Sprintf("fd[%d]:socket:[%d]", 2+len(files), ino))
	}
	var h *resumeHook
	if r.Confine != nil {
		if h, err = newResumeHook(r.WorkDir); err != nil {
			return Restored{}, err
		}
		defer h.close()
		args = append(args, "--leave-stopped", "--action-script", h.script)
	}
	start := time.Now()
	if err := lowerPids(ctx, r.Namespaces, r.PidBase); err != nil {
		return Restored{}, err
	}
	res := Restored{}
	restore := func() error {
		return runCRIU(ctx, r.Namespaces, r.CgroupProcs, pidRange(r.PidBase), args, files, filepath.Join(r.WorkDir, "restore.log"))
	}
	if h == nil {
		err = restore()
	} else {
		err = h.run(restore, func(nspid int) error {
			if res.Pid = restoredRoot(r.Namespaces, nspid, r.CgroupProcs); res.Pid == 0 {
				return fmt.Errorf("%w: the restored pid %d is not in the namespace of process %d", ErrCRIUFailed, nspid, r.Namespaces)
			}
			return release(res.Pid, r.Confine)
		})
	}
	res.Took = time.Since(start)
	if err != nil {
		return res, err
	}
	b, err := os.ReadFile(filepath.Join(r.WorkDir, "pid"))
	if err != nil {
		return res, fmt.Errorf("criu restore wrote no pid file: %w", err)
	}
	if res.NSPid, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
		return res, fmt.Errorf("criu restore's pid file: %w", err)
	}
	if res.Pid == 0 {
		res.Pid = restoredRoot(r.Namespaces, res.NSPid, r.CgroupProcs)
	}
	return res, nil
}

// release confines the tree of root, restored stopped, as plan says (criu
// restores the source's own confinement, seccomp filters and credentials,
// but no Landlock domain and nothing of the fork's), then lets it run. A
// tree that cannot be confined is killed, whole.
func release(root int, plan *confine.Plan) error {
	tree := treePids(root)
	if err := confineStopped(tree, plan); err != nil {
		killTree(tree)
		return fmt.Errorf("%w: confining the restored tree as the fork's processes are: %w", ErrCRIUFailed, err)
	}
	for _, pid := range tree {
		syscall.Kill(pid, syscall.SIGCONT)
	}
	return nil
}

func killTree(pids []int) {
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// restoredRoot is the host pid of the process whose pid is nspid in the
// pid namespace of process ns (the fork's supervisor), found among the
// processes of the cgroups criu was put in, else among ns's children
// (the restored root is reparented to ns, the namespace's init, when criu
// exits).
func restoredRoot(ns, nspid int, cgroups []string) int {
	want, err := os.Readlink(procPath(ns, "ns", "pid"))
	if err != nil {
		return 0
	}
	cands, _ := childPids(ns)
	for _, procs := range cgroups {
		b, _ := os.ReadFile(procs)
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				cands = append(cands, pid)
			}
		}
	}
	for _, pid := range cands {
		ns, _ := os.Readlink(procPath(pid, "ns", "pid"))
		if p, err := nsPid(pid); err == nil && p == nspid && ns == want {
			return pid
		}
	}
	return 0
}

// runCRIU runs criu with args inside the mount, pid, network, UTS and IPC
// namespaces of process ns (nsenter forks criu into the pid namespace),
// with files as its descriptors 3 and on; first it is put in cgroups (a
// shell waits on a pipe until tine has moved it). inner, when not "", is
// a shell script run there that execs or runs "$@" (criu). A failure wraps
// ErrCRIUFailed with the reason found in log.
func runCRIU(ctx context.Context, ns int, cgroups []string, inner string, args []string, files []*os.File, log string) error {
	criu, err := exec.LookPath("criu")
	if err != nil {
		return fmt.Errorf("%w: criu is not installed", ErrCRIUUnavailable)
	}
	gateR, gateW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer gateR.Close()
	defer gateW.Close()
	gateFD := 3 + len(files)
	script := fmt.Sprintf(`read -r _ <&%d && exec %d<&- && exec "$@"`, gateFD, gateFD)
	argv := []string{"-c", script, "sh", "nsenter", "-t", strconv.Itoa(ns), "-m", "-p", "-n", "-u", "-i", "--"}
	if inner != "" {
		argv = append(argv, "/bin/sh", "-c", inner, "sh")
	}
	argv = append(append(argv, criu), args...)
	cmd := exec.CommandContext(ctx, "/bin/sh", argv...)
	cmd.ExtraFiles = append(append([]*os.File(nil), files...), gateR)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	gateR.Close()
	for _, procs := range cgroups {
		if err := os.WriteFile(procs, []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return fmt.Errorf("putting criu in %s: %w", procs, err)
		}
	}
	gateW.WriteString("go\n")
	gateW.Close()
	if err := cmd.Wait(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%w: criu %s: %w", ErrCRIUFailed, args[0], ctx.Err())
		}
		b, _ := os.ReadFile(log)
		return fmt.Errorf("%w: criu %s: %s", ErrCRIUFailed, args[0], criuReason(criuLogErrors(string(b))+out.String(), err))
	}
	return nil
}

// pidRange is the script criu restore is run by in the fork's pid
// namespace: criu and its helpers take pids from base-200 on, below the
// run's own processes (those restored included), which the supervisor
// starts from base. The script's own shell, forked by nsenter before it
// can say so, takes the next pid, so a first nsenter has set the pids
// back already (lowerPids).
func pidRange(base int) string {
	if base < 300 {
		return ""
	}
	return fmt.Sprintf(`echo %d >%s && exec "$@"`, base-200, lastPid)
}

const lastPid = "/proc/sys/kernel/ns_last_pid"

// lowerPids makes the pid namespace of process ns hand out pids from
// base-200 on, for pidRange's shell.
func lowerPids(ctx context.Context, ns, base int) error {
	if base < 300 {
		return nil
	}
	out, err := exec.CommandContext(ctx, "nsenter", "-t", strconv.Itoa(ns), "-m", "-p", "--",
		"/bin/sh", "-c", fmt.Sprintf("echo %d >%s", base-200, lastPid)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: setting the fork's next pid: %s", ErrCRIUFailed, strings.TrimSpace(string(out)))
	}
	return nil
}

// criuLogErrors keeps the error lines of a criu log that say why it
// failed: not the harmless RLIMIT_NOFILE one criu logs in a pid
// namespace.
func criuLogErrors(log string) string {
	var b strings.Builder
	for _, line := range strings.Split(log, "\n") {
		if strings.HasPrefix(line, "Error") && !strings.Contains(line, "RLIMIT_NOFILE") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// nsPid is pid's pid in its own pid namespace.
func nsPid(pid int) (int, error) {
	b, err := os.ReadFile(procPath(pid, "status"))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				return strconv.Atoi(f[len(f)-1])
			}
		}
	}
	return 0, fmt.Errorf("process %d: no NSpid in its status", pid)
}

// externalFiles lists the regular files and devices open in the tree of
// root that criu, inside the tree's namespaces, cannot reach by path: on a
// mount the tree does not see, or below one of hidden.
func externalFiles(root int, hidden []string) ([]ExternalFile, error) {
	mounts, err := mountIDs(root)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []ExternalFile
	for _, pid := range treePids(root) {
		fds, err := os.ReadDir(procPath(pid, "fd"))
		if err != nil {
			return nil, err
		}
		for _, e := range fds {
			fd, _ := strconv.Atoi(e.Name())
			ef, ok := externalFile(pid, fd, mounts, hidden)
			if ok && !seen[ef.Key] {
				seen[ef.Key] = true
				out = append(out, ef)
			}
		}
	}
	return out, nil
}

func externalFile(pid, fd int, mounts map[int]bool, hidden []string) (ExternalFile, bool) {
	var st syscall.Stat_t
	if syscall.Stat(procPath(pid, "fd", strconv.Itoa(fd)), &st) != nil {
		return ExternalFile{}, false
	}
	if mode := st.Mode & syscall.S_IFMT; mode != syscall.S_IFREG && mode != syscall.S_IFCHR {
		return ExternalFile{}, false
	}
	path, _ := os.Readlink(procPath(pid, "fd", strconv.Itoa(fd)))
	mnt := fdMountID(pid, fd)
	if mounts[mnt] && !underAny(path, hidden) {
		return ExternalFile{}, false
	}
	return ExternalFile{Key: fmt.Sprintf("file[%x:%x]", mnt, st.Ino), Pid: pid, FD: fd, Path: path}, true
}

func underAny(path string, dirs []string) bool {
	for _, d := range dirs {
		if under(d, path) {
			return true
		}
	}
	return false
}

// mountIDs are the ids of the mounts pid sees.
func mountIDs(pid int) (map[int]bool, error) {
	b, err := os.ReadFile(procPath(pid, "mountinfo"))
	if err != nil {
		return nil, err
	}
	ids := map[int]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if id, err := strconv.Atoi(strings.SplitN(line, " ", 2)[0]); err == nil {
			ids[id] = true
		}
	}
	return ids, nil
}

func fdMountID(pid, fd int) int {
	b, _ := os.ReadFile(procPath(pid, "fdinfo", strconv.Itoa(fd)))
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "mnt_id:"); ok {
			id, _ := strconv.Atoi(strings.TrimSpace(v))
			return id
		}
	}
	return -1
}

// treePids lists root and its descendants.
func treePids(root int) []int {
	out := []int{root}
	for i := 0; i < len(out); i++ {
		kids, _ := childPids(out[i])
		out = append(out, kids...)
	}
	return out
}

// frozenTime reads frozen_time (microseconds) from criu's stats-dump
// image; without it, the whole dump's time stands for it. The image is two
// magic numbers, the u32 size of a StatsEntry and the entry, whose field 1
// is the DumpStatsEntry.
func frozenTime(path string, whole time.Duration) time.Duration {
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 12 {
		return whole
	}
	n := int(binary.LittleEndian.Uint32(b[8:]))
	if len(b) < 12+n {
		return whole
	}
	_, dump, ok := protoField(b[12:12+n], 1)
	if !ok {
		return whole
	}
	us, _, ok := protoField(dump, 2)
	if !ok {
		return whole
	}
	return time.Duration(us) * time.Microsecond
}

// protoField finds field num of a protobuf message: its value when a
// varint, its bytes when length-delimited. Other wire types end the search.
func protoField(b []byte, num uint64) (uint64, []byte, bool) {
	for len(b) > 0 {
		key, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, nil, false
		}
		b = b[n:]
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, nil, false
		}
		b = b[n:]
		var data []byte
		switch key & 7 {
		case 0:
		case 2:
			if uint64(len(b)) < v {
				return 0, nil, false
			}
			data, b = b[:v], b[v:]
		default:
			return 0, nil, false
		}
		if key>>3 == num {
			return v, data, true
		}
	}
	return 0, nil, false
}
