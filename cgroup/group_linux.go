package cgroup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// v2Controllers are the controllers tine enables for its groups in the
// unified hierarchy, where the machine has them.
var v2Controllers = []string{"memory", "cpu", "pids"}

// removeTimeout bounds how long Remove retries a directory that is busy.
const removeTimeout = 2 * time.Second

// Open creates the group called name in every hierarchy, or opens it if it
// already exists, and returns it. On the unified hierarchy it first enables
// the memory, cpu and pids controllers for tine's groups, where the machine
// has them; failing to enable one is not an error, but SetLimits will then
// report that limit as unsupported.
func Open(name string) (*Group, error) {
	g, err := lookup(name)
	if err != nil {
		return nil, err
	}
	if g.v2 != "" {
		if _, err := ensureV2Parent(filepath.Dir(filepath.Dir(g.v2))); err != nil {
			return nil, fmt.Errorf("cgroup %s: %w", name, err)
		}
	}
	for _, d := range g.dirs() {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("cgroup %s: %w", name, err)
		}
	}
	return g, nil
}

// Load returns the existing group called name. It fails with an error
// wrapping fs.ErrNotExist when no hierarchy holds the group.
func Load(name string) (*Group, error) {
	g, err := lookup(name)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(g.dirs(), exists) {
		return nil, fmt.Errorf("cgroup %s: %w", name, fs.ErrNotExist)
	}
	return g, nil
}

// List returns the sorted names of all of tine's groups in any hierarchy,
// so that a sweep can remove those whose run is gone.
func List() ([]string, error) {
	l, err := readLayout()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, root := range hierarchyRoots(l) {
		ents, err := os.ReadDir(filepath.Join(root, parentName))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cgroup: list: %w", err)
		}
		names = appendDirs(names, ents)
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

func appendDirs(names []string, ents []fs.DirEntry) []string {
	for _, e := range ents {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names
}

// hierarchyRoots returns the mount point of every hierarchy in l, each once.
func hierarchyRoots(l layout) []string {
	var roots []string
	if l.v2 != "" {
		roots = append(roots, l.v2)
	}
	for _, c := range v1Controllers {
		if r, ok := l.v1[c]; ok && !slices.Contains(roots, r) {
			roots = append(roots, r)
		}
	}
	return roots
}

// lookup validates name and works out the group's directories.
func lookup(name string) (*Group, error) {
	if err := validName(name); err != nil {
		return nil, err
	}
	l, err := readLayout()
	if err != nil {
		return nil, err
	}
	v, _ := l.version()
	g := &Group{name: name, version: v, v1: map[string]string{}}
	if l.v2 != "" {
		g.v2 = filepath.Join(l.v2, parentName, name)
	}
	for c, root := range l.v1 {
		g.v1[c] = filepath.Join(root, parentName, name)
	}
	return g, nil
}

// dirs returns every directory of the group, each once: co-mounted v1
// controllers (cpu,cpuacct) share one.
func (g *Group) dirs() []string {
	var ds []string
	if g.v2 != "" {
		ds = append(ds, g.v2)
	}
	for _, c := range v1Controllers {
		if d, ok := g.v1[c]; ok && !slices.Contains(ds, d) {
			ds = append(ds, d)
		}
	}
	return ds
}

// ensureV2Parent creates tine's parent group under the unified root and
// enables tine's controllers for it and for its children, best effort. It
// returns the parent's path.
func ensureV2Parent(root string) (string, error) {
	parent := filepath.Join(root, parentName)
	if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", err
	}
	enableControllers(root)
	enableControllers(parent)
	return parent, nil
}

// enableControllers writes "+c" to dir's cgroup.subtree_control for each of
// tine's controllers that dir has but does not yet pass on. Errors are
// ignored: a namespace root holding processes, for one, refuses them.
func enableControllers(dir string) {
	have, _ := readString(filepath.Join(dir, "cgroup.controllers"))
	on, _ := readString(filepath.Join(dir, "cgroup.subtree_control"))
	for _, c := range v2Controllers {
		if slices.Contains(strings.Fields(have), c) && !slices.Contains(strings.Fields(on), c) {
			_ = writeFile(filepath.Join(dir, "cgroup.subtree_control"), "+"+c)
		}
	}
}

// Add moves the process pid into the group in every hierarchy. Its
// children forked from then on are born in the group.
func (g *Group) Add(pid int) error {
	for _, d := range g.dirs() {
		if err := writeFile(filepath.Join(d, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("cgroup %s: add %d: %w", g.name, pid, err)
		}
	}
	return nil
}

// Procs returns the pids of the processes in the group, read from the v2
// group if there is one, else from the v1 freezer or pids group. Exited
// processes that are not yet reaped (zombies) are not listed.
func (g *Group) Procs() ([]int, error) {
	pids, err := readPids(filepath.Join(g.procsDir(), "cgroup.procs"))
	if err != nil {
		return nil, fmt.Errorf("cgroup %s: procs: %w", g.name, err)
	}
	return pids, nil
}

func (g *Group) procsDir() string {
	if g.v2 != "" {
		return g.v2
	}
	for _, c := range []string{"freezer", "pids"} {
		if d, ok := g.v1[c]; ok {
			return d
		}
	}
	return g.dirs()[0]
}

// Remove kills the processes left in the group, waits until it is empty
// and removes its directory from every hierarchy. Removing a group that
// does not exist, or exists only in part, is not an error.
func (g *Group) Remove(ctx context.Context) error {
	if err := g.Kill(ctx); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, d := range g.dirs() {
		if err := removeDir(ctx, d); err != nil {
			return fmt.Errorf("cgroup %s: remove: %w", g.name, err)
		}
	}
	return nil
}

// removeDir removes a cgroup directory, retrying briefly while the kernel
// still counts exiting tasks in it (EBUSY).
func removeDir(ctx context.Context, dir string) error {
	ctx, cancel := context.WithTimeout(ctx, removeTimeout)
	defer cancel()
	var busy error
	err := poll(ctx, func() (bool, error) {
		switch err := unix.Rmdir(dir); err {
		case nil, unix.ENOENT:
			return true, nil
		case unix.EBUSY:
			busy = &fs.PathError{Op: "rmdir", Path: dir, Err: err}
			return false, nil
		default:
			return false, &fs.PathError{Op: "rmdir", Path: dir, Err: err}
		}
	})
	if err != nil && busy != nil {
		return fmt.Errorf("%w (gave up: %v)", busy, err)
	}
	return err
}

// Created returns when the group was made: the latest modification time
// of its directories (nothing but the kernel writes in a group's
// directory, and only at its making).
func (g *Group) Created() (time.Time, error) {
	var t time.Time
	for _, d := range g.dirs() {
		st, err := os.Stat(d)
		if err != nil {
			return time.Time{}, fmt.Errorf("cgroup %s: %w", g.name, err)
		}
		if st.ModTime().After(t) {
			t = st.ModTime()
		}
	}
	return t, nil
}

// ProcsFiles returns the cgroup.procs file of each of the group's
// directories: writing a pid to each puts that process in the group, for a
// tracer placing a process it did not start.
func (g *Group) ProcsFiles() []string {
	var out []string
	for _, d := range g.dirs() {
		out = append(out, filepath.Join(d, "cgroup.procs"))
	}
	return out
}
