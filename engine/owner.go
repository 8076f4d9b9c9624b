package engine

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/account"
)

// Owner is who a workspace belongs to: its uid and primary gid.
type Owner struct {
	UID int `json:"uid"`
	GID int `json:"gid"`
}

// OwnerAccount is the account every process in w's runs runs as: its
// owner's, with their groups, home and shell.
func OwnerAccount(w *tine.Workspace) account.Account { return account.Lookup(w.UID, w.GID) }

// GiveToOwner makes each path belong to w's owner, so the processes of
// its runs (which run as the owner) can use it. Only root can; for
// anyone else, and for a workspace of this process's own user, it does
// nothing.
func GiveToOwner(w *tine.Workspace, paths ...string) error {
	if uid, _ := OwnerIDs(w); uid < 0 {
		return nil
	}
	var errs []error
	for _, p := range paths {
		errs = append(errs, os.Lchown(p, w.UID, w.GID))
	}
	return errors.Join(errs...)
}

// OwnerIDs are the uid and gid that what this process writes for w's runs
// must be given (GiveToOwner), or -1 and -1 when it needs no giving: this
// process is not root, or is w's owner.
func OwnerIDs(w *tine.Workspace) (uid, gid int) {
	if os.Geteuid() != 0 || w.UID == os.Geteuid() {
		return -1, -1
	}
	return w.UID, w.GID
}

// GiveGitToOwner gives back to the owner of dst's workspace what git, run
// as root (by merge --commits, by tine fetch), left in dst's repository (fetched objects and
// their directories, the moved ref, the index, the reflog): entries of
// root's in a repository of someone else's are root's doing, and would keep
// the owner's own git from writing there.
func (e *Engine) GiveGitToOwner(dst Ref) {
	w := dst.Workspace
	if os.Geteuid() != 0 || w.UID == 0 {
		return
	}
	filepath.WalkDir(filepath.Join(e.Path(w, dst.Run), ".git"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == 0 {
				os.Lchown(p, w.UID, w.GID)
			}
		}
		return nil
	})
}
