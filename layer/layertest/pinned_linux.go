//go:build linux

package layertest

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// chattr flags (linux/fs.h).
const (
	flagImmutable = 0x10 // FS_IMMUTABLE_FL, chattr +i
	flagAppend    = 0x20 // FS_APPEND_FL, chattr +a
)

// testPinnedFiles: an agent runs chattr +i on one file and chattr +a on
// another in its run (tine's runs may be root). The run seals and forks;
// then Deactivate and RemoveLayer still remove everything, leaving no
// undeletable layer behind (a release used to exit 1 here, and every later
// command warned of the orphan).
func testPinnedFiles(h *harness) {
	if os.Geteuid() != 0 {
		h.t.Skip("chattr +i and +a need CAP_LINUX_IMMUTABLE (root)")
	}
	base := tree{"keep": file("k"), "log": file("l0"), "dir/f": file("f")}
	v0 := h.importTree(base)
	r := h.activate(v0)
	h.do(r, put("new", file("n")))
	if err := setFlags(filepath.Join(r.View, "keep"), flagImmutable); err != nil {
		h.t.Skipf("no chattr flags in this backend's view: %v", err)
	}
	h.t.Cleanup(func() { clearFlags(h.root) })
	must(h, setFlags(filepath.Join(r.View, "new"), flagImmutable))
	must(h, setFlags(filepath.Join(r.View, "log"), flagAppend))
	want := base.with(tree{"new": file("n")})
	h.check("source with pinned files", r, want)
	fork, v1 := h.fork(r, v0)
	h.check("fork", fork, want)
	h.checkVersion("sealed version", v1, want)
	v2 := h.seal(r, v0)
	h.checkVersion("second seal", v2, want)
	h.deactivate(fork)
	h.deactivate(r)
	h.removeLayer(v1[len(v1)-1])
	h.removeLayer(v2[len(v2)-1])
}

// setFlags adds flags to path's chattr flags.
func setFlags(path string, flags int) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	old, err := unix.IoctlGetInt(fd, unix.FS_IOC_GETFLAGS)
	if err != nil {
		return err
	}
	return unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, old|flags)
}

// clearFlags removes +i and +a under root, best effort, so a failed case
// can still be cleaned up.
func clearFlags(root string) {
	_ = filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !(fi.Mode().IsRegular() || fi.IsDir()) {
			return nil
		}
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil
		}
		defer unix.Close(fd)
		if old, err := unix.IoctlGetInt(fd, unix.FS_IOC_GETFLAGS); err == nil && old&(flagImmutable|flagAppend) != 0 {
			_ = unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, old&^(flagImmutable|flagAppend))
		}
		return nil
	})
}

// must fails the case on err.
func must(h *harness, err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}
