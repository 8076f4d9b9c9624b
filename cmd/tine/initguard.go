package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/tinehq/tine"
)

// tine init takes a directory's files into a store and mounts over them:
// of /, a home directory, or a directory holding another person's files,
// that is almost never what was meant (tine init ~ as root took root's
// whole home). initGuard refuses those without --force, saying why.

// initWalkLimit bounds the entries initGuard looks at for other people's
// files; a larger tree is judged by its first initWalkLimit entries.
const initWalkLimit = 20000

// passwdEntry is one line of the passwd database: a person's name, uid and home.
type passwdEntry struct {
	name string
	uid  int
	home string
}

// accounts reads /etc/passwd; the people among them are the accounts of
// uid 1000 and up (but nobody) and root.
func accounts() []passwdEntry {
	f, err := os.Open("/etc/passwd")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []passwdEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := strings.Split(sc.Text(), ":")
		if len(p) < 6 {
			continue
		}
		uid, err := strconv.Atoi(p[2])
		if err != nil || (uid != 0 && (uid < 1000 || uid == 65534)) || p[5] == "" || p[5] == "/" || p[5] == "/nonexistent" {
			continue
		}
		out = append(out, passwdEntry{name: p[0], uid: uid, home: filepath.Clean(p[5])})
	}
	return out
}

// initGuard says why dir should not be taken under management without
// --force, or returns nil.
func initGuard(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	why := ""
	people := accounts()
	switch {
	case abs == "/":
		why = "it is the root of the file system"
	default:
		for _, a := range people {
			if abs == a.home {
				why = fmt.Sprintf("it is %s's home directory", a.name)
				break
			}
			if strings.HasPrefix(a.home, abs+"/") {
				why = fmt.Sprintf("it holds %s's home directory %s", a.name, a.home)
				break
			}
		}
	}
	if why == "" {
		why = othersFiles(abs, people)
	}
	if why == "" {
		return nil
	}
	return fmt.Errorf("not taking %s under management: %s, and tine init takes its files into tine's store and mounts over it; give a project directory, or --force if this is meant: %w",
		abs, why, tine.ErrInvalid)
}

// othersFiles names a file below dir owned by a person other than the
// caller and dir's own owner, or returns "".
func othersFiles(dir string, people []passwdEntry) string {
	st, err := os.Stat(dir)
	if err != nil {
		return ""
	}
	owner := int(st.Sys().(*syscall.Stat_t).Uid)
	names := map[int]string{}
	for _, a := range people {
		names[a.uid] = a.name
	}
	me, n, found := os.Geteuid(), 0, ""
	stop := errors.New("stop")
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if n++; err != nil || n > initWalkLimit {
			return stop
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		uid := int(info.Sys().(*syscall.Stat_t).Uid)
		if name, ok := names[uid]; ok && uid != me && uid != owner {
			found = fmt.Sprintf("it holds %s's files (%s)", name, p)
			return stop
		}
		return nil
	})
	return found
}
