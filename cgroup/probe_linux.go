package cgroup

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// Probe reports the cgroup layout of the machine and the mechanisms tine's
// groups will use. It fails with ErrUnsupported when no cgroup filesystem
// is mounted. On the unified hierarchy it creates tine's parent group, as
// Open would: the freeze and kill files exist only below the root, so
// probing for them means looking there.
func Probe() (Info, error) {
	l, err := readLayout()
	if err != nil {
		return Info{}, err
	}
	v, _ := l.version()
	info := Info{Version: v, V2Root: l.v2, V1Roots: maps.Clone(l.v1), Freeze: freezeNone, Kill: "signal"}
	var parent string
	if l.v2 != "" {
		if parent, err = ensureV2Parent(l.v2); err != nil {
			return Info{}, fmt.Errorf("cgroup: probe: %w", err)
		}
	}
	info.Freeze = probeFreeze(parent, l)
	if parent != "" && exists(filepath.Join(parent, "cgroup.kill")) {
		info.Kill = "cgroup.kill"
	}
	info.Limits = probeLimits(parent, l)
	return info, nil
}

func probeFreeze(v2parent string, l layout) string {
	switch {
	case v2parent != "" && exists(filepath.Join(v2parent, "cgroup.freeze")):
		return freezeV2
	case l.v1["freezer"] != "":
		return freezeV1
	}
	return freezeNone
}

// probeLimits lists the limit controllers tine's groups get: those the v2
// parent passes on to its children, and those with a v1 hierarchy.
func probeLimits(v2parent string, l layout) []string {
	var on []string
	if v2parent != "" {
		s, _ := readString(filepath.Join(v2parent, "cgroup.subtree_control"))
		on = strings.Fields(s)
	}
	var limits []string
	for _, c := range v2Controllers {
		if _, v1 := l.v1[c]; v1 || slices.Contains(on, c) {
			limits = append(limits, c)
		}
	}
	return limits
}
