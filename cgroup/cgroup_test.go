package cgroup

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"1048576", 1 << 20},
		{"0", 0},
		{"512M", 512 << 20},
		{"512mb", 512 << 20},
		{"2G", 2 << 30},
		{"1.5GiB", 3 << 29},
		{"1.5 GiB", 3 << 29},
		{" 64k ", 64 << 10},
		{"100B", 100},
		{"1T", 1 << 40},
		{"0.5K", 512},
		{"1.0001", 1},
	} {
		got, err := ParseBytes(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestParseBytes_Invalid(t *testing.T) {
	for _, in := range []string{"", "M", "-1", "-1M", "1X", "1.2.3G", "1e3", "NaN", "Inf",
		"9223372036854775808", "9000000000T", "9e9T", "1..5M", "1 G B"} {
		if n, err := ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", in, n)
		}
	}
}

func TestValidName(t *testing.T) {
	for _, name := range []string{"r1a2b3c4d", "test-1.x_Y", "a", strings.Repeat("a", maxNameLen)} {
		if err := validName(name); err != nil {
			t.Errorf("validName(%q) = %v", name, err)
		}
	}
	for _, name := range []string{"", ".", "..", "a/b", "../x", "/", "a b", "a\x00", "ü",
		strings.Repeat("a", maxNameLen+1)} {
		if err := validName(name); !errors.Is(err, ErrInvalidName) {
			t.Errorf("validName(%q) = %v, want ErrInvalidName", name, err)
		}
	}
}

const (
	hybridMountinfo = `30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
31 30 0:28 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
32 30 0:29 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
33 30 0:30 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 30 0:33 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
38 30 0:35 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	v2Mountinfo = `22 1 0:21 / / rw - ext4 /dev/sda1 rw
29 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
90 29 0:26 / /mnt/other\040cg rw shared:4 - cgroup2 cgroup2 rw
`
	v1Mountinfo = `25 22 0:22 / /sys/fs/cgroup/cpu,cpuacct rw shared:9 master:2 - cgroup cgroup rw,cpu,cpuacct
26 22 0:23 /docker/abc /sys/fs/cgroup/free\040zer rw - cgroup cgroup rw,freezer
27 22 0:24 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
28 22 0:25 / /elsewhere/memory rw - cgroup cgroup rw,memory
`
)

func TestParseMountinfo(t *testing.T) {
	for _, tc := range []struct {
		name    string
		text    string
		v2      string
		v1      map[string]string
		version Version
	}{
		{"hybrid", hybridMountinfo, "/sys/fs/cgroup/unified", map[string]string{
			"cpu": "/sys/fs/cgroup/cpu", "cpuacct": "/sys/fs/cgroup/cpuacct", "memory": "/sys/fs/cgroup/memory",
			"freezer": "/sys/fs/cgroup/freezer", "pids": "/sys/fs/cgroup/pids"}, Hybrid},
		{"v2", v2Mountinfo, "/sys/fs/cgroup", map[string]string{}, V2},
		{"v1", v1Mountinfo, "", map[string]string{
			"cpu": "/sys/fs/cgroup/cpu,cpuacct", "cpuacct": "/sys/fs/cgroup/cpu,cpuacct",
			"freezer": "/sys/fs/cgroup/free zer", "memory": "/sys/fs/cgroup/memory"}, V1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := parseMountinfo(strings.NewReader(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			if l.v2 != tc.v2 || !maps.Equal(l.v1, tc.v1) {
				t.Errorf("layout = %q %v; want %q %v", l.v2, l.v1, tc.v2, tc.v1)
			}
			if v, ok := l.version(); !ok || v != tc.version {
				t.Errorf("version = %q, %v; want %q", v, ok, tc.version)
			}
		})
	}
}

func TestParseMountinfo_NoCgroups(t *testing.T) {
	l, err := parseMountinfo(strings.NewReader("22 1 0:21 / / rw - ext4 /dev/sda1 rw\ngarbage\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := l.version(); ok {
		t.Errorf("version = %q, want none", v)
	}
}
