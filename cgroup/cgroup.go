package cgroup

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrUnsupported means the machine has no usable cgroup filesystem, or
	// lacks the controller or interface file an operation needs.
	ErrUnsupported = errors.New("cgroups not supported")
	// ErrInvalidName means a group name is empty, too long, "." or "..", or
	// holds a character other than letters, digits, '-', '_' and '.'.
	ErrInvalidName = errors.New("invalid cgroup name")
)

// parentName is the directory under each hierarchy's root that holds all
// of tine's groups.
const parentName = "tine"

// maxNameLen bounds group names; run ids are far shorter.
const maxNameLen = 128

// Version names the cgroup layout of a machine.
type Version string

// The three layouts Probe can report.
const (
	V1     Version = "v1"     // only legacy per-controller hierarchies
	V2     Version = "v2"     // only the unified hierarchy
	Hybrid Version = "hybrid" // both: v1 controllers beside a v2 tree
)

// Limits are the resource limits of a group. A zero field means unlimited.
type Limits struct {
	MemoryBytes int64   // memory.max or memory.limit_in_bytes
	CPU         float64 // cores of CPU time per period, e.g. 1.5
	Pids        int64   // tasks (processes and threads)
}

// Stats is a snapshot of a group's usage. A counter whose file this machine
// lacks reads as zero.
type Stats struct {
	MemoryBytes     int64         `json:"memory_bytes"`      // current memory use
	MemoryPeakBytes int64         `json:"memory_peak_bytes"` // highest memory use seen, where the kernel keeps it
	CPUUsage        time.Duration `json:"cpu_usage_ns"`      // CPU time used by all tasks, ever
	Pids            int           `json:"pids"`              // processes in the group
	Frozen          bool          `json:"frozen"`            // every task is frozen
	Version         Version       `json:"cgroup_version"`    // layout of the machine
}

// Info describes the cgroup layout of the machine, as Probe found it.
type Info struct {
	Version Version
	// V2Root is the mount point of the unified hierarchy, or "".
	V2Root string
	// V1Roots maps each v1 controller tine uses to its mount point.
	V1Roots map[string]string
	// Freeze is the freezing mechanism: "v2", "v1" or "none".
	Freeze string
	// Kill is the kill mechanism: "cgroup.kill" or "signal".
	Kill string
	// Limits lists the limit controllers available: "memory", "cpu", "pids".
	Limits []string
}

// Group is one run's control group across every hierarchy in use. Its
// methods are safe to call from several goroutines, but freezing, thawing
// and killing the same group concurrently give no ordering guarantee.
type Group struct {
	name    string
	version Version
	v2      string            // the group's v2 directory, or ""
	v1      map[string]string // v1 controller → the group's directory there
	// noV2Freeze and noV2Kill make Freeze use the v1 freezer and Kill use
	// signals even where the v2 group offers better, so tests can exercise
	// the fallbacks on any machine.
	noV2Freeze, noV2Kill bool
}

// Name returns the group's name, the run id it was opened with.
func (g *Group) Name() string { return g.name }

// validName reports whether name is usable as a directory in a cgroup
// hierarchy and cannot escape the tine parent.
func validName(name string) error {
	bad := name == "" || name == "." || name == ".." || len(name) > maxNameLen ||
		strings.IndexFunc(name, func(r rune) bool { return !nameRune(r) }) >= 0
	if bad {
		return fmt.Errorf("%w: %q", ErrInvalidName, name)
	}
	return nil
}

func nameRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		r == '-' || r == '_' || r == '.'
}
