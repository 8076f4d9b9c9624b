package cgroup

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"time"
)

// cpuPeriod is the CFS period, in microseconds, that CPU limits are set in.
const cpuPeriod = 100000

// minCPUQuota is the smallest quota the kernel accepts, in microseconds.
const minCPUQuota = 1000

// SetLimits sets the memory, CPU and pids limits of the group, each in the
// v2 group when its controller is enabled there, else in the controller's
// v1 hierarchy. A zero field lifts that limit. A non-zero limit whose
// controller the machine lacks fails with ErrUnsupported.
func (g *Group) SetLimits(l Limits) error {
	if err := checkLimits(l); err != nil {
		return fmt.Errorf("cgroup %s: set limits: %w", g.name, err)
	}
	for _, set := range []func() error{
		func() error { return g.setMemory(l.MemoryBytes) },
		func() error { return g.setCPU(l.CPU) },
		func() error { return g.setPids(l.Pids) },
	} {
		if err := set(); err != nil {
			return fmt.Errorf("cgroup %s: set limits: %w", g.name, err)
		}
	}
	return nil
}

func checkLimits(l Limits) error {
	if l.MemoryBytes < 0 || l.Pids < 0 || l.CPU < 0 || math.IsNaN(l.CPU) || math.IsInf(l.CPU, 0) {
		return fmt.Errorf("invalid limits %+v", l)
	}
	return nil
}

func (g *Group) setMemory(n int64) error {
	if p := g.v2file("memory.max"); p != "" {
		return writeFile(p, maxOr(n))
	}
	return g.setV1("memory", n != 0, "memory.limit_in_bytes", limitOr(n, "-1"))
}

func (g *Group) setPids(n int64) error {
	if p := g.v2file("pids.max"); p != "" {
		return writeFile(p, maxOr(n))
	}
	return g.setV1("pids", n != 0, "pids.max", maxOr(n))
}

func (g *Group) setCPU(cores float64) error {
	quota := int64(0)
	if cores > 0 {
		quota = max(int64(cores*cpuPeriod), minCPUQuota)
	}
	if p := g.v2file("cpu.max"); p != "" {
		return writeFile(p, maxOr(quota)+" "+strconv.Itoa(cpuPeriod))
	}
	if err := g.setV1("cpu", quota != 0, "cpu.cfs_period_us", strconv.Itoa(cpuPeriod)); err != nil {
		return err
	}
	return g.setV1("cpu", quota != 0, "cpu.cfs_quota_us", limitOr(quota, "-1"))
}

// setV1 writes value to file in the controller's v1 group. Without that
// hierarchy, lifting a limit (limited false) is trivially done and setting
// one is unsupported.
func (g *Group) setV1(controller string, limited bool, file, value string) error {
	d, ok := g.v1[controller]
	switch {
	case ok:
		return writeFile(filepath.Join(d, file), value)
	case limited:
		return fmt.Errorf("%s limit: no %s controller: %w", controller, controller, ErrUnsupported)
	}
	return nil
}

// v2file returns the path of the v2 group's interface file name when it
// exists, that is when its controller is enabled for the group.
func (g *Group) v2file(name string) string {
	if g.v2 == "" {
		return ""
	}
	if p := filepath.Join(g.v2, name); exists(p) {
		return p
	}
	return ""
}

// v1file returns the path of file in the controller's v1 group, or "".
func (g *Group) v1file(controller, file string) string {
	if d, ok := g.v1[controller]; ok {
		return filepath.Join(d, file)
	}
	return ""
}

func maxOr(n int64) string { return limitOr(n, "max") }

// limitOr formats n, or unlimited when n is zero.
func limitOr(n int64, unlimited string) string {
	if n == 0 {
		return unlimited
	}
	return strconv.FormatInt(n, 10)
}

// Stats reads the group's current usage. Counters this machine does not
// keep read as zero.
func (g *Group) Stats() (Stats, error) {
	s := Stats{Version: g.version}
	var err [5]error
	s.MemoryBytes, err[0] = g.counter("memory.current", "memory", "memory.usage_in_bytes")
	s.MemoryPeakBytes, err[1] = g.counter("memory.peak", "memory", "memory.max_usage_in_bytes")
	s.CPUUsage, err[2] = g.cpuUsage()
	s.Frozen, err[3] = g.Frozen()
	pids, e := g.Procs()
	s.Pids, err[4] = len(pids), e
	if e := errors.Join(err[:]...); e != nil {
		return Stats{}, fmt.Errorf("cgroup %s: stats: %w", g.name, e)
	}
	return s, nil
}

// counter reads a one-number file from the v2 group, else from the v1
// controller's group, else returns zero.
func (g *Group) counter(v2name, controller, v1name string) (int64, error) {
	var v2 string
	if g.v2 != "" {
		v2 = filepath.Join(g.v2, v2name)
	}
	return readFirst(readInt, v2, g.v1file(controller, v1name))
}

// cpuUsage reads usage_usec from the v2 cpu.stat, which even a v2 group
// without the cpu controller has, else the v1 cpuacct.usage in ns.
func (g *Group) cpuUsage() (time.Duration, error) {
	if p := g.v2file("cpu.stat"); p != "" {
		n, err := readKey(p, "usage_usec")
		return time.Duration(n) * time.Microsecond, err
	}
	n, err := readFirst(readInt, g.v1file("cpuacct", "cpuacct.usage"))
	return time.Duration(n), err
}
