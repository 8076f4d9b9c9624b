package procfs

import (
	"os"
	"slices"
	"strings"

	"github.com/prometheus/procfs"
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
	fs, err := open(root)
	if err != nil {
		return nil
	}
	procs, err := fs.AllProcs()
	if err != nil {
		return nil
	}
	var out []Holder
	seen := map[int]bool{}
	add := func(p procfs.Proc, uses string) {
		comm, _ := p.Comm()
		out = append(out, Holder{Pid: p.PID, Command: comm, Uses: uses})
		seen[p.PID] = true
	}
	self := os.Getpid()
	for _, p := range procs {
		cwd, _ := p.Cwd()
		rootDir, _ := p.RootDir()
		for _, l := range []struct{ target, uses string }{{cwd, "cwd"}, {rootDir, "root"}} {
			if len(out) < max && p.PID != self && !seen[p.PID] && in(l.target, dirs) {
				add(p, l.uses)
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	for _, p := range procs {
		if len(out) < max && p.PID != self && openIn(p, dirs) {
			add(p, "open file")
		}
	}
	return out
}

// in reports whether target, a path a link of /proc names, is in one of
// dirs.
func in(target string, dirs []string) bool {
	if target == "" || target == "/" {
		return false
	}
	for _, d := range dirs {
		if target == d || strings.HasPrefix(target, d+"/") {
			return true
		}
	}
	return false
}

// openIn reports whether a descriptor of p names a path in one of dirs.
func openIn(p procfs.Proc, dirs []string) bool {
	targets, err := p.FileDescriptorTargets()
	if err != nil {
		return false
	}
	return slices.ContainsFunc(targets, func(t string) bool { return in(t, dirs) })
}
