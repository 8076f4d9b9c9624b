package procfs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/prometheus/procfs"

	"github.com/tinehq/tine/internal/display"
)

// Holder is a process that uses a directory: its working directory or
// root lies in it, or a file it has open.
type Holder struct {
	Pid     int    `json:"pid"`
	Command string `json:"command"` // its name, as /proc/PID/comm says
	Uses    string `json:"uses"`    // "cwd", "root" or "open file"
}

// String says how h uses the directory, for people: "pid 4121 bash has
// its cwd in it"; the command's name is shown safely (display.Text).
func (h Holder) String() string {
	uses := "has a file open in it"
	switch h.Uses {
	case "cwd":
		uses = "has its cwd in it"
	case "root":
		uses = "has its root in it"
	}
	return fmt.Sprintf("pid %d %s %s", h.Pid, display.Text(h.Command), uses)
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
	under := coveredDevs(dirs)
	for _, p := range procs {
		cwd, _ := p.Cwd()
		rootDir, _ := p.RootDir()
		for _, l := range []struct{ target, link, uses string }{{cwd, "cwd", "cwd"}, {rootDir, "root", "root"}} {
			if len(out) < max && p.PID != self && !seen[p.PID] && in(l.target, dirs) &&
				!beneath(filepath.Join(procRoot(root), strconv.Itoa(p.PID), l.link), l.target, under) {
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

// coveredDevs maps each of dirs that is a mount point to the device of
// the filesystem it covers (its parent's).
func coveredDevs(dirs []string) map[string]uint64 {
	m := map[string]uint64{}
	for _, d := range dirs {
		var st, parent syscall.Stat_t
		if syscall.Stat(d, &st) == nil && syscall.Stat(filepath.Dir(d), &parent) == nil && st.Dev != parent.Dev {
			m[d] = uint64(parent.Dev)
		}
	}
	return m
}

// beneath reports whether the directory link (a process's /proc cwd or
// root link, naming target) lies beneath the mount on one of the dirs
// under maps, in the filesystem it covers, not in the mount: a shell
// that was in a directory when tine init mounted over it. Its path reads
// as the mount's, but it holds nothing of it.
func beneath(link, target string, under map[string]uint64) bool {
	var st syscall.Stat_t
	if len(under) == 0 || syscall.Stat(link, &st) != nil {
		return false
	}
	for d, dev := range under {
		if (target == d || strings.HasPrefix(target, d+"/")) && uint64(st.Dev) == dev {
			return true
		}
	}
	return false
}

// procRoot is the proc mount Holders reads: root, or /proc.
func procRoot(root string) string {
	if root == "" {
		return procfs.DefaultMountPoint
	}
	return root
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
