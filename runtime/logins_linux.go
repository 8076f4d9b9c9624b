package runtime

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/account"
	"github.com/tinehq/tine/internal/atomicfile"
	"github.com/tinehq/tine/internal/tick"
	"golang.org/x/sys/unix"
)

// maxLogin bounds a sign-in file read: they are a few kilobytes.
const maxLogin = 64 << 10

// syncLogins carries fork r's agents' sign-ins to its owner's home where
// the fork refreshed one (carryLogins), and the home's to a stopped fork
// whose copy is older. A running fork's copy is left (its home is mounted;
// its agent's next refresh fails, the person's does not).
func (m *Manager) syncLogins(r engine.Ref) []string {
	acct := engine.OwnerAccount(r.Workspace)
	if acct.Home == "" || acct.Home == "/" {
		return nil
	}
	upper := filepath.Join(m.lay.Run(r.Workspace.ID, r.Run.ID).Home(), "upper")
	stopped := func() bool { st, _ := m.ProcState(r); return st != ProcRunning }
	return carryLogins(acct, upper, "", r.Workspace.Name+"/"+r.Run.Name, stopped)
}

// carryLogins compares each sign-in of agent.LoginFiles in a fork's home,
// at forkHome below forkDir (a fork's home layer, or the root of a process
// in it), with its owner acct's: where the fork's parses as a sign-in of
// the same account as the home's and is fresher, it replaces the home's
// (a home without one is not signed in by a fork); where it is the older
// and toFork says so (asked then only), the home's replaces it. Files are reached without following
// a symbolic link below forkDir and the home (the fork and the owner
// control every name there), written by a temporary file renamed over, as
// the owner's, 0600. It says what it carried home, naming the fork name.
func carryLogins(acct account.Account, forkDir, forkHome, name string, toFork func() bool) []string {
	var out []string
	for _, rel := range agent.LoginFiles {
		inFork := filepath.Join(forkHome, rel)
		forkCopy, err := readBeneath(forkDir, inFork)
		if err != nil {
			continue // the fork never wrote it: it sees the home's
		}
		real, err := readBeneath(acct.Home, rel)
		if err != nil || bytes.Equal(real, forkCopy) {
			continue // none in the home: a fork does not sign its owner in
		}
		fl, fok := agent.ParseLogin(rel, forkCopy)
		rl, rok := agent.ParseLogin(rel, real)
		switch {
		case fok && rok && fl.Account == rl.Account && fl.Fresh.After(rl.Fresh):
			if writeBeneath(acct.Home, rel, forkCopy, acct.UID, acct.GID) == nil {
				out = append(out, "~/"+rel+" from "+name)
			}
		case fok && rok && fl.Account == rl.Account && rl.Fresh.After(fl.Fresh) && toFork():
			writeBeneath(forkDir, inFork, real, acct.UID, acct.GID)
		}
	}
	return out
}

// readBeneath reads the regular file rel below dir (fstree.Root: no
// symbolic link followed on the way, nothing outside dir reached), of at
// most maxLogin bytes. dir itself is tine's (a layer, a process's root,
// the home passwd names).
func readBeneath(dir, rel string) ([]byte, error) {
	r, err := fstree.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, fi, err := r.ReadFileBeneath(rel, maxLogin)
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxLogin {
		return nil, &os.PathError{Op: "read", Path: r.Join(rel), Err: unix.EINVAL}
	}
	return b, nil
}

// writeBeneath replaces the file rel below dir with data, belonging to uid
// and gid, mode 0600, durably, through rel's directory opened beneath dir
// (fstree.Root; it must exist).
func writeBeneath(dir, rel string, data []byte, uid, gid int) error {
	r, err := fstree.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer r.Close()
	d, err := r.OpenFile(filepath.Dir(rel), unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return err
	}
	defer d.Close()
	return atomicfile.WriteIn(d, filepath.Base(rel), data, 0o600, uid, gid, atomicfile.ExactMode, atomicfile.Durable)
}

// WatchLogins carries, while command pid of tine exec's sandbox runs in a
// fork, a sign-in its agent refreshed in the fork's home to the owner's
// home (carryLogins) every 2 s: that home is a layer lasting the one
// command, reached through /proc/PID/root, so a refresh there was lost
// with it, the person signed out. The returned function stops it.
func (s *Sandboxed) WatchLogins(pid int) (stop func()) {
	if s.Hide == nil || s.Hide.HomeLayer == "" || s.r.Run.Role != tine.RoleFork {
		return func() {}
	}
	acct := engine.OwnerAccount(s.r.Workspace)
	if acct.Home == "" || acct.Home == "/" {
		return func() {}
	}
	root, home := fmt.Sprintf("/proc/%d/root", pid), strings.TrimPrefix(acct.Home, "/")
	name := s.r.Workspace.Name + "/" + s.r.Run.Name
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		never := func() bool { return false } // its home is mounted
		tick.Every(ctx, 2*time.Second, func() { carryLogins(acct, root, home, name, never) })
	}()
	return func() { cancel(); <-done }
}
