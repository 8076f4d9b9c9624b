package livefork

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"github.com/tinehq/tine/internal/procfs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

func procPath(pid int, parts ...string) string {
	return filepath.Join(append([]string{"/proc", strconv.Itoa(pid)}, parts...)...)
}

// status holds the fields of /proc/PID/status that decide eligibility.
type status struct {
	state   byte // R, S, D, T, t, Z, X, ...
	threads int
	tracer  int
}

func readStatus(pid int) (status, error) {
	data, err := os.ReadFile(procPath(pid, "status"))
	if err != nil {
		return status{}, err
	}
	var st status
	for _, line := range strings.Split(string(data), "\n") {
		key, val, _ := strings.Cut(line, ":")
		val = strings.TrimSpace(val)
		switch key {
		case "State":
			if val != "" {
				st.state = val[0]
			}
		case "Threads":
			st.threads, _ = strconv.Atoi(val)
		case "TracerPid":
			st.tracer, _ = strconv.Atoi(val)
		}
	}
	return st, nil
}

// childPids lists the children of every thread of pid, from
// /proc/PID/task/*/children, or by scanning /proc when the kernel lacks it.
func childPids(pid int) ([]int, error) {
	tasks, err := os.ReadDir(procPath(pid, "task"))
	if err != nil {
		return nil, err
	}
	var kids []int
	for _, task := range tasks {
		data, err := os.ReadFile(procPath(pid, "task", task.Name(), "children"))
		if errors.Is(err, os.ErrNotExist) {
			return scanChildren(pid)
		}
		if err != nil {
			return nil, err
		}
		for _, f := range strings.Fields(string(data)) {
			if n, err := strconv.Atoi(f); err == nil {
				kids = append(kids, n)
			}
		}
	}
	sort.Ints(kids)
	return kids, nil
}

func scanChildren(pid int) ([]int, error) {
	procs, err := procfs.All("")
	if err != nil {
		return nil, err
	}
	var kids []int
	for _, p := range procs {
		if p.PPid == pid {
			kids = append(kids, p.Pid)
		}
	}
	return kids, nil
}

// hasDontfork reports whether any mapping of pid carries the "dc" VmFlag
// (MADV_DONTFORK): such memory would be missing in the child.
func hasDontfork(pid int) (bool, error) {
	f, err := os.Open(procPath(pid, "smaps"))
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "VmFlags:") {
			continue
		}
		for _, fl := range strings.Fields(line[len("VmFlags:"):]) {
			if fl == "dc" {
				return true, nil
			}
		}
	}
	return false, sc.Err()
}

// isX8664 reports whether pid's executable is a 64-bit x86-64 ELF file.
func isX8664(pid int) (bool, error) {
	f, err := os.Open(procPath(pid, "exe"))
	if err != nil {
		return false, err
	}
	defer f.Close()
	var hdr [20]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return false, err
	}
	const elfClass64, emX8664 = 2, 62
	return string(hdr[:4]) == "\x7fELF" && hdr[4] == elfClass64 && hdr[18] == emX8664 && hdr[19] == 0, nil
}

// fdLink is one open descriptor of a process and what it points at.
type fdLink struct {
	fd   int
	link string
}

func listFDs(pid int) ([]fdLink, error) {
	ents, err := os.ReadDir(procPath(pid, "fd"))
	if err != nil {
		return nil, err
	}
	fds := make([]fdLink, 0, len(ents))
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		link, err := os.Readlink(procPath(pid, "fd", e.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		fds = append(fds, fdLink{fd: n, link: link})
	}
	sort.Slice(fds, func(i, j int) bool { return fds[i].fd < fds[j].fd })
	return fds, nil
}

// fdInfo is the open-file state in /proc/PID/fdinfo/FD. flags include
// O_CLOEXEC when the descriptor is close-on-exec.
type fdInfo struct {
	pos   int64
	flags int
}

func readFdinfo(pid, fd int) (fdInfo, error) {
	data, err := os.ReadFile(procPath(pid, "fdinfo", strconv.Itoa(fd)))
	if err != nil {
		return fdInfo{}, err
	}
	var fi fdInfo
	for _, line := range strings.Split(string(data), "\n") {
		key, val, _ := strings.Cut(line, ":")
		val = strings.TrimSpace(val)
		switch key {
		case "pos":
			fi.pos, err = strconv.ParseInt(val, 10, 64)
		case "flags":
			var f int64
			f, err = strconv.ParseInt(val, 8, 64)
			fi.flags = int(f)
		}
		if err != nil {
			return fdInfo{}, fmt.Errorf("fdinfo %d/%d: %w", pid, fd, err)
		}
	}
	return fi, nil
}

// under reports whether path is dir or inside it.
func under(dir, path string) bool {
	dir = strings.TrimSuffix(dir, "/")
	return path == dir || strings.HasPrefix(path, dir+"/")
}

// mapping is one line of /proc/PID/maps.
type mapping struct {
	start, end uint64
	perms      string
	path       string
}

func readMaps(pid int) ([]mapping, error) {
	data, err := os.ReadFile(procPath(pid, "maps"))
	if err != nil {
		return nil, err
	}
	var ms []mapping
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		var m mapping
		m.start, _ = strconv.ParseUint(lo, 16, 64)
		m.end, _ = strconv.ParseUint(hi, 16, 64)
		m.perms = f[1]
		if len(f) >= 6 {
			m.path = strings.Join(f[5:], " ")
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// sharedWritableUnder names a shared writable mapping of a file under dir:
// the child would keep writing through it into the origin's file.
func sharedWritableUnder(pid int, dir string) (string, error) {
	ms, err := readMaps(pid)
	if err != nil {
		return "", err
	}
	for _, m := range ms {
		if strings.Contains(m.perms, "w") && strings.HasSuffix(m.perms, "s") && under(dir, m.path) {
			return m.path, nil
		}
	}
	return "", nil
}

// findGadget returns the address of a "syscall" instruction (0f 05) in
// pid's vDSO, or failing that in any executable mapping.
func findGadget(pid int) (uint64, error) {
	ms, err := readMaps(pid)
	if err != nil {
		return 0, err
	}
	mem, err := os.Open(procPath(pid, "mem"))
	if err != nil {
		return 0, err
	}
	defer mem.Close()
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].path == "[vdso]" && ms[j].path != "[vdso]" })
	for _, m := range ms {
		if !strings.HasPrefix(m.perms, "r-x") {
			continue
		}
		buf := make([]byte, min(m.end-m.start, 1<<20))
		n, _ := mem.ReadAt(buf, int64(m.start))
		if i := bytes.Index(buf[:n], []byte{0x0f, 0x05}); i >= 0 {
			return m.start + uint64(i), nil
		}
	}
	return 0, errors.New("no syscall instruction in the vDSO or any executable mapping")
}
