package engine_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/engine/enginetest"
	"github.com/tinehq/tine/internal/loopfs"
	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/runtime"
)

// tineUser returns the uid and gid of the test's normal user (tineuser),
// skipping unless this is root and the user exists.
func tineUser(t *testing.T) (uid, gid int) {
	return testkit.TineUser(t, "runs as their workspace's owner are started by root")
}

// shortDir is a state directory short enough for supervisor sockets.
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "tine")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func ownerOf(t *testing.T, p string) int {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return int(fi.Sys().(*syscall.Stat_t).Uid)
}

// chownTree gives every entry under root to uid:gid.
func chownTree(t *testing.T, root string, uid, gid int) {
	t.Helper()
	err := filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestOwner_RunsAsOwner: in a workspace owned by a normal user, a command,
// a service and a fork's command run as that user (uid, groups, HOME,
// USER), what they create is theirs on every backend (copy, overlay, and
// reflink and btrfs on loop filesystems), and merging and
// releasing keep it so.
func TestOwner_RunsAsOwner(t *testing.T) {
	uid, gid := tineUser(t)
	for _, be := range []struct{ name, fstype string }{{"copy", ""}, {"overlay", ""}, {"reflink", "xfs"}, {"btrfs", "btrfs"}} {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			// The owner must reach the workspace path: not under a 0700 TempDir.
			home, path := shortDir(t), filepath.Join(shortDir(t), "ws")
			switch {
			case be.fstype != "":
				root := loopfs.Mount(t, be.fstype) // the state directory and the workspace on one filesystem
				for _, d := range []string{root, filepath.Dir(root)} {
					os.Chmod(d, 0o755)
				}
				home, path = filepath.Join(root, "st"), filepath.Join(root, "ws")
			}
			os.MkdirAll(filepath.Join(path, "src"), 0o755)
			os.WriteFile(filepath.Join(path, "src", "a.txt"), []byte("a\n"), 0o644)
			os.WriteFile(filepath.Join(path, "tine.toml"), []byte("[[service]]\nname = \"svc\"\ncommand = \"id -u > svc.uid; exec sleep 600\"\nready = { command = \"test -s svc.uid\" }\n"), 0o644)
			chownTree(t, path, uid, gid)
			os.Chmod(filepath.Dir(path), 0o755)
			w := enginetest.New(t, enginetest.Options{Backend: be.name, Home: home, Path: path, Owner: &engine.Owner{UID: uid, GID: gid}})
			e, ws := w.Engine, w.Source
			if ws.Workspace.UID != uid || ws.Workspace.GID != gid {
				t.Fatalf("workspace owner %d:%d, want %d:%d", ws.Workspace.UID, ws.Workspace.GID, uid, gid)
			}
			src := ws.Workspace.Name + "/source"
			st, err := runtime.Of(e).Start(ctx, src, runtime.StartOptions{Services: true})
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			defer runtime.Of(e).Stop(ctx, src)
			if got := strings.TrimSpace(readFileT(t, filepath.Join(path, "svc.uid"))); got != strconv.Itoa(uid) {
				t.Errorf("the service ran as uid %q, want %d (%+v)", got, uid, st.Services)
			}
			if o := ownerOf(t, filepath.Join(path, "svc.uid")); o != uid {
				t.Errorf("the service's file belongs to %d, want %d", o, uid)
			}
			fr, err := e.Fork(ctx, src, engine.ForkOptions{Copies: 1, Live: engine.LiveNone})
			if err != nil {
				t.Fatalf("Fork: %v", err)
			}
			fork := ws.Workspace.Name + "/" + fr.Forks[0].Name
			res, err := runtime.Of(e).ExecCapture(ctx, fork, []string{"sh", "-c",
				`id -u; echo "$HOME $USER $LOGNAME"; cat "$TINE_CAPABILITY" >/dev/null && echo cap; echo new > new.txt; mkdir -p d && echo f > d/f; echo x >> src/a.txt`}, 30*time.Second)
			if err != nil || res.Exit != 0 {
				t.Fatalf("exec: %v %+v", err, res)
			}
			lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
			if len(lines) != 3 || lines[0] != strconv.Itoa(uid) || lines[1] != "/home/tineuser tineuser tineuser" || lines[2] != "cap" {
				t.Errorf("exec printed %q (%s), want uid %d, tineuser's HOME, USER, LOGNAME and the capability read", res.Stdout, res.Stderr, uid)
			}
			view := e.Path(ws.Workspace, fr.Forks[0])
			for _, p := range []string{"new.txt", "d", "d/f", "src/a.txt"} {
				if o := ownerOf(t, filepath.Join(view, p)); o != uid {
					t.Errorf("%s in the fork belongs to %d, want %d", p, o, uid)
				}
			}
			runtime.Of(e).Stop(ctx, fork)
			if _, err := e.Merge(ctx, fork, engine.MergeOptions{Force: true}); err != nil {
				t.Fatalf("Merge: %v", err)
			}
			for _, p := range []string{"new.txt", "d", "d/f", "src/a.txt"} {
				if o := ownerOf(t, filepath.Join(path, p)); o != uid {
					t.Errorf("%s merged into the source belongs to %d, want %d", p, o, uid)
				}
			}
			if _, err := runtime.Of(e).Stop(ctx, src); err != nil {
				t.Fatal(err)
			}
			if _, err := e.Release(ctx, ws.Workspace.Name, true); err != nil {
				t.Fatalf("Release: %v", err)
			}
			for _, p := range []string{".", "new.txt", "d/f", "src/a.txt", "svc.uid"} {
				if o := ownerOf(t, filepath.Join(path, p)); o != uid {
					t.Errorf("%s after release belongs to %d, want %d", p, o, uid)
				}
			}
		})
	}
}

// TestOwner_RootWorkspaceRunsAsRoot: a workspace root made runs as root.
func TestOwner_RootWorkspaceRunsAsRoot(t *testing.T) {
	tineUser(t)
	ctx := context.Background()
	home, path := shortDir(t), filepath.Join(t.TempDir(), "ws")
	w := enginetest.New(t, enginetest.Options{Home: home, Path: path})
	e, ws := w.Engine, w.Source
	if ws.Workspace.UID != 0 {
		t.Fatalf("root's workspace has owner %d", ws.Workspace.UID)
	}
	src := ws.Workspace.Name + "/source"
	defer runtime.Of(e).Stop(ctx, src)
	t.Setenv("HOME", "/tmp/roots-own-home")
	res, err := runtime.Of(e).ExecCapture(ctx, src, []string{"sh", "-c", "id -u; echo $HOME"}, 30*time.Second)
	if err != nil || res.Stdout != "0\n/tmp/roots-own-home\n" {
		t.Errorf("exec in root's workspace printed %q (%v), want 0 and root's own HOME kept", res.Stdout, err)
	}
}

func readFileT(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestOwner_MergeCommitsKeepTheRepositoryTheOwners: merge --commits runs
// git as root in the target's repository; what it writes there (objects,
// their directories, the ref, the index) goes back to the workspace's
// owner, whose own git then still commits.
func TestOwner_MergeCommitsKeepTheRepositoryTheOwners(t *testing.T) {
	uid, gid := tineUser(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	ctx := context.Background()
	home, path := shortDir(t), filepath.Join(shortDir(t), "ws")
	os.MkdirAll(path, 0o755)
	os.Chmod(filepath.Dir(path), 0o755)
	os.WriteFile(filepath.Join(path, "a.txt"), []byte("a\n"), 0o644)
	chownTree(t, path, uid, gid)
	git := []string{"-c", "user.name=T", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"}
	asOwner := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append(git, args...)...)
		cmd.Dir, cmd.Env = dir, []string{"HOME=/home/tineuser", "PATH=/usr/bin:/bin"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	asOwner(path, "init", "-q")
	asOwner(path, "add", "-A")
	asOwner(path, "commit", "-qm", "one")
	w := enginetest.New(t, enginetest.Options{Home: home, Path: path, Owner: &engine.Owner{UID: uid, GID: gid}})
	e, ws := w.Engine, w.Source
	fr, err := e.Fork(ctx, ws.Workspace.Name+"/source", engine.ForkOptions{Copies: 1})
	if err != nil {
		t.Fatal(err)
	}
	fork := ws.Workspace.Name + "/" + fr.Forks[0].Name
	gitc := "git -c user.name=T -c user.email=t@example.com"
	res, err := runtime.Of(e).ExecCapture(ctx, fork, []string{"sh", "-c", "echo b > b.txt && " + gitc + " add b.txt && " + gitc + " commit -qm two"}, time.Minute)
	if err != nil || res.Exit != 0 {
		t.Fatalf("commit in the fork: %v %+v", err, res)
	}
	runtime.Of(e).Stop(ctx, fork)
	if _, err := e.Merge(ctx, fork, engine.MergeOptions{}); err != nil {
		t.Fatalf("merge --commits: %v", err)
	}
	filepath.Walk(filepath.Join(path, ".git"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && int(fi.Sys().(*syscall.Stat_t).Uid) != uid {
			t.Errorf("%s belongs to uid %d after merge --commits, want %d", p, fi.Sys().(*syscall.Stat_t).Uid, uid)
		}
		return nil
	})
	asOwner(path, "commit", "-q", "--allow-empty", "-m", "three")
}
