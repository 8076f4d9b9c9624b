package cgroup

import (
	"io"
	"slices"
	"strings"

	"github.com/tinehq/tine/internal/mnt"
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

// parseMountinfo reads /proc/<pid>/mountinfo text and finds the unified
// hierarchy and the v1 hierarchy of each controller tine uses. The first
// mount of a hierarchy wins.
func parseMountinfo(r io.Reader) (layout, error) {
	l := layout{v1: map[string]string{}}
	infos, err := mnt.ParseInfo(r)
	for _, m := range infos {
		l.add(m)
	}
	return l, err
}

func (l *layout) add(m mnt.Info) {
	switch m.FSType {
	case "cgroup2":
		if l.v2 == "" {
			l.v2 = m.Point
		}
	case "cgroup":
		for _, opt := range strings.Split(m.Super, ",") {
			if _, dup := l.v1[opt]; !dup && slices.Contains(v1Controllers, opt) {
				l.v1[opt] = m.Point
			}
		}
	}
}
