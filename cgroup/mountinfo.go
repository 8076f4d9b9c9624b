package cgroup

import (
	"bufio"
	"io"
	"slices"
	"strconv"
	"strings"
)

// v1Controllers lists the v1 controllers tine puts its groups in.
var v1Controllers = []string{"freezer", "memory", "cpu", "cpuacct", "pids"}

// layout is where the cgroup hierarchies are mounted.
type layout struct {
	v2 string            // mount point of the unified hierarchy, or ""
	v1 map[string]string // v1 controller → mount point of its hierarchy
}

// version names the layout; ok is false when there is no usable hierarchy.
func (l layout) version() (v Version, ok bool) {
	switch {
	case l.v2 != "" && len(l.v1) > 0:
		return Hybrid, true
	case l.v2 != "":
		return V2, true
	case len(l.v1) > 0:
		return V1, true
	}
	return "", false
}

// mountEntry is the part of a mountinfo line the layout needs.
type mountEntry struct {
	point  string // mount point
	fstype string // "cgroup", "cgroup2", ...
	super  string // super options, e.g. "rw,cpu,cpuacct"
}

// parseMountinfo reads /proc/<pid>/mountinfo text and finds the unified
// hierarchy and the v1 hierarchy of each controller tine uses. The first
// mount of a hierarchy wins.
func parseMountinfo(r io.Reader) (layout, error) {
	l := layout{v1: map[string]string{}}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m, ok := parseMountLine(sc.Text())
		if ok {
			l.add(m)
		}
	}
	return l, sc.Err()
}

func (l *layout) add(m mountEntry) {
	switch m.fstype {
	case "cgroup2":
		if l.v2 == "" {
			l.v2 = m.point
		}
	case "cgroup":
		for _, opt := range strings.Split(m.super, ",") {
			if _, dup := l.v1[opt]; !dup && slices.Contains(v1Controllers, opt) {
				l.v1[opt] = m.point
			}
		}
	}
}

// parseMountLine splits one mountinfo line (see proc(5)): fields 0-5 are
// fixed, optional fields follow until a lone "-", then fstype, source and
// super options.
func parseMountLine(line string) (mountEntry, bool) {
	f := strings.Fields(line)
	if len(f) < 10 {
		return mountEntry{}, false
	}
	sep := slices.Index(f[6:], "-") + 6
	if sep < 6 || len(f) < sep+4 {
		return mountEntry{}, false
	}
	return mountEntry{point: unescapeOctal(f[4]), fstype: f[sep+1], super: f[sep+3]}, true
}

// unescapeOctal undoes the kernel's \ooo escaping of spaces, tabs,
// newlines and backslashes in mountinfo paths.
func unescapeOctal(s string) string {
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
