package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/procfs"
)

// Released is a workspace Release let go of, and where it put what it
// found beneath the workspace's mount.
type Released struct {
	tine.Workspace
	// Aside is the directory beside the workspace into which Release
	// moved what had been written beneath the workspace's mount, "" when
	// nothing had. A process whose working directory was the workspace
	// directory when tine init mounted over it (a shell that did not cd
	// again) writes there, unseen by the workspace and out of reach of a
	// normal user while the mount stands.
	Aside string `json:"aside,omitempty"`
	// AsideNames are the entries moved into Aside.
	AsideNames []string `json:"aside_names,omitempty"`
}

// clearBeneath readies the unmounted workspace directory path for the
// released files: it removes the scratch of an earlier release, and moves
// anything else but tine's marker (written beneath the mount) into a new
// directory beside path, owned as path is, so that nothing of anyone's is
// lost or in the way. It returns that directory and what it moved; on an
// error nothing has moved.
func clearBeneath(path string) (aside string, moved []string, err error) {
	names, err := readNames(path)
	if err != nil {
		return "", nil, err
	}
	var found []string
	for _, n := range names {
		switch {
		case n == markerName:
		case strings.HasPrefix(n, ".tine-release-"):
			if err := fstree.Purge(filepath.Join(path, n)); err != nil {
				return "", nil, err
			}
		default:
			found = append(found, n)
		}
	}
	if len(found) == 0 {
		return "", nil, nil
	}
	refuse := func(err error) error {
		return fmt.Errorf("%s holds %q under its mount, which the released files would replace, and it could not be moved beside it (%v); move it away and retry: %w", path, found[0], err, tine.ErrExists)
	}
	aside, err = makeAside(path)
	if err != nil {
		return "", nil, refuse(err)
	}
	for i, n := range found {
		if err := os.Rename(filepath.Join(path, n), filepath.Join(aside, n)); err != nil {
			for _, m := range found[:i] {
				os.Rename(filepath.Join(aside, m), filepath.Join(path, m))
			}
			os.Remove(aside)
			return "", nil, refuse(err)
		}
	}
	return aside, found, nil
}

// makeAside makes a new directory beside path, named for it and the time,
// with path's owner and permissions.
func makeAside(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", fmt.Errorf("%s: no owner", path)
	}
	base := path + ".beneath-mount-" + time.Now().Format("20060102-150405")
	for i := 1; ; i++ {
		p := base
		if i > 1 {
			p = fmt.Sprintf("%s-%d", base, i)
		}
		err := os.Mkdir(p, 0o700)
		if os.IsExist(err) && i < 100 {
			continue
		}
		if err != nil {
			return "", err
		}
		if err := os.Lchown(p, int(st.Uid), int(st.Gid)); err != nil {
			os.Remove(p)
			return "", err
		}
		if err := os.Chmod(p, fi.Mode().Perm()); err != nil {
			os.Remove(p)
			return "", err
		}
		return p, nil
	}
}

// inUse is the error for the workspace directory path that a process
// keeps mounted (unmounting it failed with err): it names up to three
// such processes.
func inUse(path string, err error) error {
	who := "a process uses it"
	if hs := procfs.Holders("", []string{path}, 3); len(hs) > 0 {
		var s []string
		for _, h := range hs {
			s = append(s, h.String())
		}
		who = strings.Join(s, "; ")
	}
	return fmt.Errorf("%s is in use (%s): cd out of it or close it, and retry (%v): %w", path, who, err, tine.ErrBusy)
}
