package main

import (
	"errors"
	"os"
	"os/user"
	"strconv"
	"testing"

	"github.com/tinehq/tine"
)

// TestForwardedUser: a user another node forwarded a request for is
// served as this node's user of the same name, a normal user; a name this
// node has not, and one that is root or the daemon's own user here, are
// refused (the node answers 403 unknown_user), never served as anyone.
func TestForwardedUser(t *testing.T) {
	for _, name := range []string{"tine-no-such-user-x9", "root", daemonUser(t)} {
		if c, err := forwardedUser("n", name); !errors.Is(err, tine.ErrPrivilege) {
			t.Errorf("forwardedUser(%q) = %+v, %v; want refused", name, c, err)
		}
	}
	u, err := user.Lookup("nobody")
	if err != nil || u.Uid == strconv.Itoa(os.Geteuid()) {
		t.Skip("needs the user nobody, not this test's")
	}
	c, err := forwardedUser("n", "nobody")
	if err != nil || strconv.Itoa(c.UID) != u.Uid || strconv.Itoa(c.GID) != u.Gid {
		t.Errorf("forwardedUser(nobody) = %+v, %v; want uid %s gid %s", c, err, u.Uid, u.Gid)
	}
}

// daemonUser is the name of this process's user.
func daemonUser(t *testing.T) string {
	u, err := user.LookupId(strconv.Itoa(os.Geteuid()))
	if err != nil {
		t.Skip(err)
	}
	return u.Username
}
