package cgroup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

const mountinfoPath = "/proc/self/mountinfo"

// Polling backs off from pollMin to pollMax between checks.
const (
	pollMin = time.Millisecond
	pollMax = 20 * time.Millisecond
)

// layoutCache is the last layout readLayout found. Parsing the mount table
// costs in proportion to the host's mounts (thousands on a host of
// containers) and every Load did it; the cgroup hierarchies themselves
// hardly ever change.
var layoutCache struct {
	sync.Mutex
	l  layout
	ok bool
}

// readLayout finds the cgroup hierarchies of the calling process's mount
// namespace. It fails with ErrUnsupported when there are none. The last
// layout found is answered again as long as each of its mount points is
// still a cgroup file system (a statfs each); otherwise the mount table is
// read again.
func readLayout() (layout, error) {
	layoutCache.Lock()
	defer layoutCache.Unlock()
	if layoutCache.ok && layoutCache.l.mounted() {
		return layoutCache.l, nil
	}
	l, err := parseLayout()
	layoutCache.l, layoutCache.ok = l, err == nil
	return l, err
}

// mounted reports whether each of l's mount points is a cgroup file
// system still.
func (l layout) mounted() bool {
	points := []string{l.v2}
	for _, p := range l.v1 {
		points = append(points, p)
	}
	for _, p := range points {
		if p == "" {
			continue
		}
		var st unix.Statfs_t
		if unix.Statfs(p, &st) != nil || (st.Type != unix.CGROUP2_SUPER_MAGIC && st.Type != unix.CGROUP_SUPER_MAGIC) {
			return false
		}
	}
	return true
}

// parseLayout reads the cgroup hierarchies from the mount table.
func parseLayout() (layout, error) {
	f, err := os.Open(mountinfoPath)
	if err != nil {
		return layout{}, fmt.Errorf("cgroup: %w", err)
	}
	defer f.Close()
	l, err := parseMountinfo(f)
	if err != nil {
		return layout{}, fmt.Errorf("cgroup: read %s: %w", mountinfoPath, err)
	}
	if _, ok := l.version(); !ok {
		return layout{}, fmt.Errorf("cgroup: no cgroup or cgroup2 mount in %s: %w", mountinfoPath, ErrUnsupported)
	}
	return l, nil
}

// writeFile writes value to an existing cgroup interface file. Unlike
// os.WriteFile it never tries to create the file, so a missing controller
// shows as ENOENT, not EPERM.
func writeFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readString returns a cgroup file's content without surrounding space.
func readString(path string) (string, error) {
	b, err := os.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}

// readInt reads a file holding one integer.
func readInt(path string) (int64, error) {
	s, err := readString(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("parse %s: %w", path, err)
	}
	return n, nil
}

// readKey reads the integer after key in a flat-keyed file such as
// cgroup.events or cpu.stat. A missing key reads as zero.
func readKey(path, key string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		if k == key {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse %s %s: %w", path, key, err)
			}
			return n, nil
		}
	}
	return 0, sc.Err()
}

// readPids reads a cgroup.procs file.
func readPids(path string) ([]int, error) {
	s, err := readString(path)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(s) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", path, err)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// readFirst returns read of the first path that exists, skipping empty
// paths; when none exists it returns zero.
func readFirst(read func(string) (int64, error), paths ...string) (int64, error) {
	for _, p := range paths {
		if p == "" {
			continue
		}
		n, err := read(p)
		if !errors.Is(err, fs.ErrNotExist) {
			return n, err
		}
	}
	return 0, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// poll calls cond until it reports done or fails, sleeping between calls
// with a short backoff, and gives up when ctx is done, even before the
// first call.
func poll(ctx context.Context, cond func() (bool, error)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	delay := pollMin
	for {
		done, err := cond()
		if err != nil || done {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		delay = min(2*delay, pollMax)
	}
}
