// Package procfs reads the few fields of /proc/PID/stat that tine needs:
// parent, process group, session and start time. It is the one parser of
// that file in tine.
package procfs

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
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

// ErrFormat means a stat line could not be parsed.
var ErrFormat = errors.New("malformed /proc stat line")

// ParseStat parses one /proc/PID/stat line. The command name, field 2, is
// parenthesised and may hold spaces and parentheses: fields are counted
// from the last ')'.
func ParseStat(b []byte) (Stat, error) {
	open := bytes.IndexByte(b, '(')
	i := bytes.LastIndexByte(b, ')')
	if open < 1 || i < open {
		return Stat{}, ErrFormat
	}
	pid, err := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
	if err != nil {
		return Stat{}, ErrFormat
	}
	f := bytes.Fields(b[i+1:])
	// After the name: state(3) ppid(4) pgrp(5) session(6) ... starttime(22).
	if len(f) < 20 || len(f[0]) != 1 {
		return Stat{}, ErrFormat
	}
	s := Stat{Pid: pid, State: f[0][0], StartTime: string(f[19])}
	for j, p := range []*int{&s.PPid, &s.PGrp, &s.Session} {
		if *p, err = strconv.Atoi(string(f[1+j])); err != nil {
			return Stat{}, ErrFormat
		}
	}
	return s, nil
}

// Read reads the stat of pid under the proc mount at root ("/proc" when
// empty).
func Read(root string, pid int) (Stat, error) {
	if root == "" {
		root = "/proc"
	}
	b, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return Stat{}, err
	}
	return ParseStat(b)
}

// All returns the stat of every process visible under root ("/proc" when
// empty). Processes that end while it reads are skipped.
func All(root string) ([]Stat, error) {
	if root == "" {
		root = "/proc"
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []Stat
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if s, err := Read(root, pid); err == nil {
			out = append(out, s)
		}
	}
	return out, nil
}

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
