package engine

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/tinehq/tine/internal/mnt"
)

// beneathMount writes files into the directory beneath path's mount, as a
// process whose working directory was path before the mount would, and
// gives that directory to uid: from a private mount namespace, where the
// mount is gone.
func beneathMount(t *testing.T, path string, uid int, files map[string]string) {
	t.Helper()
	script := "umount -l \"$1\" && chown " + strconv.Itoa(uid) + " \"$1\" && cd \"$1\""
	for name, text := range files {
		script += " && mkdir -p \"$(dirname '" + name + "')\" && printf '%s' '" + text + "' > '" + name + "'"
	}
	if out, err := exec.Command("unshare", "-m", "sh", "-c", script, "sh", path).CombinedOutput(); err != nil {
		t.Fatalf("writing beneath %s's mount: %v: %s", path, err, out)
	}
}

// A process whose working directory was the workspace directory when tine
// init mounted over it writes beneath the mount, where the workspace does
// not see it and a normal user cannot reach it while the mount stands.
// Release moves it beside the workspace, owned as the directory is, and
// says where; it refused before, and only root could clear the way.
func TestEngine_ReleaseMovesAsideWhatIsBeneathItsMount(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("requires root: overlay mounts and a private mount namespace")
	}
	f := newFixture(t, "overlay")
	beneathMount(t, f.path, 1001, map[string]string{"node_modules/x/index.js": "hidden\n", "a.txt": "beneath\n"})
	writeFiles(t, f.path, map[string]string{"seen.txt": "seen\n"})
	rel, err := f.e.Release(f.ctx, f.path, true)
	if err != nil {
		t.Fatalf("Release with files beneath its mount: %v", err)
	}
	if ok, _ := mnt.IsMountpoint(f.path); ok {
		t.Error("workspace still mounted")
	}
	if got := readFile(t, filepath.Join(f.path, "a.txt")); got != "alpha\n" {
		t.Errorf("released a.txt = %q, want the source's", got)
	}
	if got := readFile(t, filepath.Join(f.path, "seen.txt")); got != "seen\n" {
		t.Errorf("released seen.txt = %q", got)
	}
	if _, err := os.Stat(filepath.Join(f.path, "node_modules")); !os.IsNotExist(err) {
		t.Errorf("node_modules, from beneath the mount, is in the released tree: %v", err)
	}
	if filepath.Dir(rel.Aside) != filepath.Dir(f.path) || !strings.HasPrefix(filepath.Base(rel.Aside), "ws.beneath-mount-") {
		t.Fatalf("moved aside into %q; want a directory beside %s", rel.Aside, f.path)
	}
	if !slices.Equal(rel.AsideNames, []string{"a.txt", "node_modules"}) {
		t.Errorf("moved aside %v", rel.AsideNames)
	}
	if got := readFile(t, filepath.Join(rel.Aside, "node_modules/x/index.js")); got != "hidden\n" {
		t.Errorf("moved node_modules/x/index.js = %q", got)
	}
	if got := readFile(t, filepath.Join(rel.Aside, "a.txt")); got != "beneath\n" {
		t.Errorf("moved a.txt = %q", got)
	}
	fi, err := os.Stat(rel.Aside)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != 1001 {
		t.Errorf("the directory moved into is uid %d's, want the workspace directory's owner 1001", st.Uid)
	}
}
