// Package procfs reads what tine needs of /proc: a process's parent,
// process group, session and start time (through
// github.com/prometheus/procfs, the one reader of /proc/PID/stat in tine),
// the processes that hold a directory, and the TCP listeners of a network
// namespace.
package procfs

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/prometheus/procfs"
)

// Stat is the part of /proc/PID/stat tine uses.
type Stat struct {
	Pid       int
	State     byte   // R, S, D, Z, T, ...
	PPid      int    // parent
	PGrp      int    // process group
	Session   int    // session id
	StartTime string // clock ticks since boot; identifies an incarnation of Pid
}

// Exited reports whether the process has ended and only its entry is
// left: a zombie (Z) its parent has not reaped, or one being reaped (X).
// Such a process holds no files, runs nothing and answers nobody.
func (s Stat) Exited() bool { return s.State == 'Z' || s.State == 'X' || s.State == 'x' }

// Alive reports whether pid, under the proc mount at root ("/proc" when
// empty), is the incarnation that started at start (a StartTime read
// earlier) and has not ended: a pid that was reused, or one left as an
// unreaped zombie, is not alive.
func Alive(root string, pid int, start string) bool {
	if pid <= 0 || start == "" {
		return false
	}
	s, err := Read(root, pid)
	return err == nil && s.StartTime == start && !s.Exited()
}

// Read reads the stat of pid under the proc mount at root ("/proc" when
// empty).
func Read(root string, pid int) (Stat, error) {
	fs, err := open(root)
	if err != nil {
		return Stat{}, err
	}
	p, err := fs.Proc(pid)
	if err != nil {
		return Stat{}, err
	}
	return stat(p)
}

// All returns the stat of every process visible under root ("/proc" when
// empty). Processes that end while it reads are skipped.
func All(root string) ([]Stat, error) {
	fs, err := open(root)
	if err != nil {
		return nil, err
	}
	procs, err := fs.AllProcs()
	if err != nil {
		return nil, err
	}
	out := make([]Stat, 0, len(procs))
	for _, p := range procs {
		if s, err := stat(p); err == nil {
			out = append(out, s)
		}
	}
	return out, nil
}

// open is the proc file system mounted at root ("/proc" when empty).
func open(root string) (procfs.FS, error) {
	if root == "" {
		root = procfs.DefaultMountPoint
	}
	return procfs.NewFS(root)
}

// stat reads p's stat: the fields tine uses.
func stat(p procfs.Proc) (Stat, error) {
	ps, err := p.Stat()
	if err != nil {
		return Stat{}, err
	}
	if len(ps.State) != 1 {
		return Stat{}, fmt.Errorf("/proc/%d/stat: state %q: %w", p.PID, ps.State, ErrFormat)
	}
	return Stat{Pid: ps.PID, State: ps.State[0], PPid: ps.PPID, PGrp: ps.PGRP, Session: ps.Session,
		StartTime: strconv.FormatUint(ps.Starttime, 10)}, nil
}

// ErrFormat means a stat line could not be parsed.
var ErrFormat = errors.New("malformed /proc stat line")

// Tree returns the pids, among procs, that belong to session sid or descend
// from root: what a command started as a session leader left behind, even
// the parts that moved to a session of their own. root itself is included
// when listed.
func Tree(procs []Stat, root, sid int) []int {
	in := map[int]bool{}
	for _, p := range procs {
		if p.Pid == root || (sid > 0 && p.Session == sid) {
			in[p.Pid] = true
		}
	}
	for grew := true; grew; {
		grew = false
		for _, p := range procs {
			if !in[p.Pid] && in[p.PPid] {
				in[p.Pid], grew = true, true
			}
		}
	}
	var out []int
	for _, p := range procs {
		if in[p.Pid] {
			out = append(out, p.Pid)
		}
	}
	return out
}
