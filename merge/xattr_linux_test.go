package merge

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/testkit"
	"golang.org/x/sys/unix"
)

// xattrNames are the attributes TestApply_MetadataAsCopied sets: a user's
// own, in the user and trusted namespaces, and overlayfs' (which mark
// whiteouts, opaque directories and redirects inside a layer).
var xattrNames = []string{"user.tine-test", "trusted.tine-test", "trusted.overlay.opaque", "user.overlay.opaque"}

// setXattrs sets every name of xattrNames that p's type allows (user.* is
// refused on a symlink), skipping the test when the filesystem has none.
func setXattrs(t *testing.T, p string) {
	t.Helper()
	for _, name := range xattrNames {
		err := unix.Lsetxattr(p, name, []byte("v"), 0)
		switch {
		case errors.Is(err, unix.ENOTSUP):
			t.Skipf("%s: no %s here", p, name)
		case errors.Is(err, unix.EPERM) && strings.HasPrefix(name, "user."):
		case err != nil:
			t.Fatalf("lsetxattr %s %s: %v", p, name, err)
		}
	}
}

// xattrsOf returns the names of p's extended attributes, of xattrNames.
func xattrsOf(t *testing.T, p string) string {
	t.Helper()
	names, err := fstree.Llistxattr(p)
	if err != nil {
		t.Fatalf("llistxattr %s: %v", p, err)
	}
	var out []string
	for _, n := range names {
		if strings.Contains(n, "tine-test") || strings.Contains(n, ".overlay.") {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// TestApply_MetadataAsCopied: a file, a directory and a symlink the run
// added land in the target with the metadata fstree.CopyMeta gives a
// user's tree: owner, permission bits, times and every extended
// attribute, trusted.* included, but overlayfs' own. Before, a merged
// directory lost all its attributes and a symlink its trusted.* and times,
// where a copy (release, fstree.Copy) kept them.
func TestApply_MetadataAsCopied(t *testing.T) {
	testkit.RequireRoot(t, "trusted.* attributes and chown")
	s := makeSides(t, tree{"keep": file("k")}, tree{"keep": file("k"), "f": file("data"), "d": dir(), "l": link("keep")}, tree{"keep": file("k")})
	for _, n := range []string{"f", "d", "l"} {
		p := filepath.Join(s.theirs, n)
		setXattrs(t, p)
		if err := unix.Lchown(p, 1001, 1001); err != nil {
			t.Fatal(err)
		}
		ts := []unix.Timespec{unix.NsecToTimespec(1e18), unix.NsecToTimespec(1.5e18)}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			t.Fatal(err)
		}
	}
	p := planSides(t, s, PlanOptions{})
	if err := Apply(context.Background(), p, s.ours, journalPath(t), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"f", "d", "l"} {
		src, dst := filepath.Join(s.theirs, n), filepath.Join(s.ours, n)
		want := "trusted.tine-test user.tine-test"
		if n == "l" {
			want = "trusted.tine-test"
		}
		if got := xattrsOf(t, dst); got != want {
			t.Errorf("%s merged: attributes %q, want %q (the user's, not overlayfs')", n, got, want)
		}
		sfi, err := os.Lstat(src)
		if err != nil {
			t.Fatal(err)
		}
		dfi, err := os.Lstat(dst)
		if err != nil {
			t.Fatal(err)
		}
		if st := dfi.Sys().(*syscall.Stat_t); st.Uid != 1001 || st.Gid != 1001 {
			t.Errorf("%s merged: owner %d:%d, want the run's 1001:1001", n, st.Uid, st.Gid)
		}
		if n != "d" && !dfi.ModTime().Equal(sfi.ModTime()) { // placing entries moves a directory's time
			t.Errorf("%s merged: mtime %v, want %v", n, dfi.ModTime(), sfi.ModTime())
		}
	}
}
