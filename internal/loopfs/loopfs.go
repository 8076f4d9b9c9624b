package loopfs

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// Size is the apparent size of the sparse image file behind each mount.
const Size = 512 << 20

// mkfs gives, per supported filesystem type, the command that formats an
// image file (appended as the last argument).
var mkfs = map[string][]string{
	"xfs":   {"mkfs.xfs", "-q", "-m", "reflink=1"},
	"btrfs": {"mkfs.btrfs", "-q"},
	"ext4":  {"mkfs.ext4", "-q", "-F"},
}

// Mount formats a sparse image of Size bytes under tb.TempDir() with fstype
// ("xfs" with reflinks, "btrfs" or "ext4"), loop-mounts it on a fresh temp
// directory and returns that directory. The mount is undone (and the loop
// device freed, by autoclear) when the test ends. Mount skips the test, with
// the reason, when not on Linux, not root, or the tools are missing.
func Mount(tb testing.TB, fstype string) string {
	tb.Helper()
	args, ok := mkfs[fstype]
	if !ok {
		tb.Fatalf("loopfs: unsupported filesystem type %q", fstype)
	}
	skipUnlessAble(tb, args[0])
	img := filepath.Join(tb.TempDir(), fstype+".img")
	dir := tb.TempDir()
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.Truncate(img, Size); err != nil {
		tb.Fatal(err)
	}
	run(tb, append(args, img)...)
	run(tb, "mount", "-t", fstype, "-o", "loop", img, dir)
	tb.Cleanup(func() { unmount(tb, dir) })
	return dir
}

// skipUnlessAble skips tb unless it runs as root on Linux with tool and
// mount available.
func skipUnlessAble(tb testing.TB, tool string) {
	tb.Helper()
	if runtime.GOOS != "linux" {
		tb.Skip("loopfs: loop mounts need Linux")
	}
	if os.Geteuid() != 0 {
		tb.Skip("loopfs: loop mounts require root")
	}
	for _, t := range []string{tool, "mount", "umount"} {
		if _, err := exec.LookPath(t); err != nil {
			tb.Skipf("loopfs: %s not found: %v", t, err)
		}
	}
}

// run runs a command, failing tb with its output if it fails.
func run(tb testing.TB, args ...string) {
	tb.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		tb.Fatalf("loopfs: %v: %v\n%s", args, err, out)
	}
}

// unmount unmounts dir, lazily if something still holds it.
func unmount(tb testing.TB, dir string) {
	tb.Helper()
	out, err := exec.Command("umount", dir).CombinedOutput()
	if err == nil {
		return
	}
	tb.Logf("loopfs: umount %s: %v: %s; detaching lazily", dir, err, out)
	if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
		tb.Errorf("loopfs: umount -l %s: %v: %s", dir, err, out)
	}
}
