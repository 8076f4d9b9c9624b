// Package testkit holds the test helpers every package shares and that
// need nothing of tine: skipping without root or the test's normal user,
// and writing the files of benchmark trees. Helpers that need an engine are in engine/enginetest.
package testkit

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
)

// RequireRoot skips the test unless it runs as root; why says what needs
// root, as the skip message shows it ("requires root: why").
func RequireRoot(tb testing.TB, why string) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("requires root: " + why)
	}
}

// TineUser returns the uid and gid of the tests' normal user, tineuser
// (.ci/run makes it), skipping unless this is root (why says what needs
// it) and the user exists.
func TineUser(tb testing.TB, why string) (uid, gid int) {
	tb.Helper()
	RequireRoot(tb, why)
	u, err := user.Lookup("tineuser")
	if err != nil {
		tb.Skip("needs the user tineuser (uid 1001): useradd -m -u 1001 tineuser")
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		tb.Fatalf("tineuser's ids %q:%q", u.Uid, u.Gid)
	}
	return uid, gid
}

// WriteFile writes size bytes of letters to p, making its directory: the
// files of benchmark trees. Files of a different fill differ in every
// byte, so that no two of a tree are alike.
func WriteFile(tb testing.TB, p string, size int, fill byte) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	data := make([]byte, size)
	for i := range data {
		data[i] = 'a' + (fill+byte(i))%26
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		tb.Fatal(err)
	}
}
