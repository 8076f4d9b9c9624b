package procfs

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Holder is a process that uses a directory: its working directory or
// root lies in it, or a file it has open.
type Holder struct {
	Pid     int    `json:"pid"`
	Command string `json:"command"` // its name, as /proc/PID/comm says
	Uses    string `json:"uses"`    // "cwd", "root" or "open file"
}

// Holders returns up to max processes, other than this one, that use one
// of dirs (absolute paths), under the proc mount at root ("/proc" when
// empty): those whose working directory or root is in one of them, or,
// only when there is none (the usual holder is a shell or an editor with
// its cwd there, and every process's descriptors cost a readlink each),
// those with a file open in one. Processes it may not look into, and
// those that end while it reads, are left out; off Linux it finds none.
func Holders(root string, dirs []string, max int) []Holder {
	if root == "" {
		root = "/proc"
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	var out []Holder
	seen := map[int]bool{}
	add := func(pid int, uses string) {
		comm, _ := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "comm"))
		out = append(out, Holder{Pid: pid, Command: strings.TrimSpace(string(comm)), Uses: uses})
		seen[pid] = true
	}
	for _, pid := range pids {
		for _, link := range []string{"cwd", "root"} {
			if len(out) < max && !seen[pid] && linkIn(filepath.Join(root, strconv.Itoa(pid), link), dirs) {
				add(pid, link)
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, pid := range pids {
		if len(out) < max && openIn(filepath.Join(root, strconv.Itoa(pid), "fd"), dirs) {
			add(pid, "open file")
		}
	}
	return out
}

// linkIn reports whether the symlink at p names a path in one of dirs.
func linkIn(p string, dirs []string) bool {
	target, err := os.Readlink(p)
	if err != nil || target == "/" {
		return false
	}
	for _, d := range dirs {
		if target == d || strings.HasPrefix(target, d+"/") {
			return true
		}
	}
	return false
}

// openIn reports whether a descriptor in the fd directory names a path in
// one of dirs.
func openIn(fdDir string, dirs []string) bool {
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if linkIn(filepath.Join(fdDir, e.Name()), dirs) {
			return true
		}
	}
	return false
}
