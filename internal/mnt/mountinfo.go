package mnt

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Info is one line of /proc/PID/mountinfo (see proc(5)).
type Info struct {
	ID     int    // mount ID, unique in its namespace
	Parent int    // the parent mount's ID
	Dev    string // major:minor of the filesystem
	Root   string // the directory of the filesystem mounted
	Point  string // the mount point, relative to the process's root
	FSType string // "ext4", "overlay", "cgroup2", ...
	Source string // the mount source ("/dev/sda1", "overlay", ...)
	Super  string // the super block's options, e.g. "rw,cpu,cpuacct"
}

// ParseInfo reads mountinfo text. Lines it cannot read are skipped.
func ParseInfo(r io.Reader) ([]Info, error) {
	var out []Info
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if m, ok := ParseInfoLine(sc.Text()); ok {
			out = append(out, m)
		}
	}
	return out, sc.Err()
}

// ParseInfoLine splits one mountinfo line: fields 0-5 are fixed, optional
// fields follow until a lone "-", then fstype, source and super options.
func ParseInfoLine(line string) (Info, bool) {
	f := strings.Fields(line)
	if len(f) < 10 {
		return Info{}, false
	}
	sep := slices.Index(f[6:], "-") + 6
	if sep < 6 || len(f) < sep+4 {
		return Info{}, false
	}
	id, err1 := strconv.Atoi(f[0])
	parent, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return Info{}, false
	}
	return Info{ID: id, Parent: parent, Dev: f[2], Root: Unescape(f[3]), Point: Unescape(f[4]),
		FSType: f[sep+1], Source: Unescape(f[sep+2]), Super: f[sep+3]}, true
}

// Unescape undoes the kernel's \ooo escaping of spaces, tabs, newlines and
// backslashes in mountinfo paths.
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Below returns the mount points of infos strictly inside dir, deepest
// first, so unmounting them in order never finds one still covered.
func Below(infos []Info, dir string) []string {
	dir = filepath.Clean(dir)
	var out []string
	for _, m := range infos {
		if strings.HasPrefix(m.Point, dir+"/") {
			out = append(out, m.Point)
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		if d := strings.Count(b, "/") - strings.Count(a, "/"); d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	return slices.Compact(out)
}

// MountsBelow reads this process's mount table once and returns the mount
// points strictly inside dir, deepest first (none where there is no
// /proc/self/mountinfo). It costs one read of the table, where a walk
// asking IsMountpoint of every directory costs the tree.
func MountsBelow(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	infos, err := ParseInfo(f)
	if err != nil {
		return nil, err
	}
	return Below(infos, dir), nil
}
