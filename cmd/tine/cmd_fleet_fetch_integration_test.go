//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine/fleet"
	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/postgres/pgtest"
)

// commitsAgent is a command agent that makes two commits of two authors
// and leaves a file uncommitted.
const commitsAgent = `echo one > one.txt && git add one.txt && git -c user.name=Ada -c user.email=ada@a commit -qm "first: one" &&
	echo two > two.txt && git add two.txt && git -c user.name=Bob -c user.email=bob@b commit -qm "second: two" && echo wip > wip.txt`

// gitLog is git log --format=%an %s of the repository at dir, newest
// first, whoever owns it.
func gitLog(t *testing.T, dir string) string {
	t.Helper()
	return hostCmd(t, dir, "git", "-c", "safe.directory=*", "log", "--format=%an %s")
}

// TestFleet_FetchCommits: tine fetch replays the winner's commits
// (authors, messages, order) into a fork of the developer's workspace, and
// tine merge lands them in its history: fast-forward when the workspace is
// at the task's commit, replayed on top when its HEAD moved on; a
// repository without the task's commit gets the winner's files alone, with
// a warning. Before, fetch applied the files as one patch and the commits
// were lost (the workspace's history unchanged, the files untracked).
func TestFleet_FetchCommits(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	url := pgtest.URL(t)
	repo, _ := fleetRepo(t)
	startNode(t, url, "nc")
	dev := newEnv(t)
	dev.vars = append(dev.vars, "TINE_FLEET_URL="+url)
	id := strings.TrimSpace(dev.ok("submit", "--repo", repo, "--command", commitsAgent, "-n", "1"))
	st := waitTasks(t, dev, 1, 3*time.Minute)
	if tk := st.Tasks[0]; tk.State != fleet.TaskDone || !tk.HasBundle || len(tk.Commits) != 2 {
		t.Fatalf("task %s: %s (%s), bundle %v, commits %q; want done with its two commits stored", id, tk.State, tk.Reason, tk.HasBundle, tk.Commits)
	}
	clone := func(name, then string) string {
		ws := dev.workspaceDir(name)
		hostSh(t, ws, "git clone -q "+repo+" . "+then)
		dev.ok("init", ws)
		return ws
	}

	t.Run("FastForward", func(t *testing.T) {
		ws := clone("ff", "")
		r := dev.run(call{dir: ws}, "fetch", id)
		if r.code != 0 || !strings.Contains(r.stdout, "its 2 commit(s) and files") || r.stderr != "" {
			t.Fatalf("%v", r)
		}
		dev.ok("merge", "--dry-run", id)
		if out := dev.run(call{dir: ws}, "merge", id); out.code != 0 {
			t.Fatalf("%v", out)
		}
		if log := gitLog(t, ws); log != "Bob second: two\nAda first: one\nt init\n" {
			t.Errorf("the workspace's history after tine merge:\n%s\nwant the winner's two commits on init", log)
		}
		if s := hostCmd(t, ws, "git", "status", "--porcelain"); s != "?? wip.txt\n" {
			t.Errorf("git status after tine merge: %q; want the winner's uncommitted wip.txt alone", s)
		}
	})
	t.Run("Replayed", func(t *testing.T) {
		ws := clone("moved", "&& echo mine > mine.txt && git add mine.txt && git -c user.name=Dev -c user.email=d@d commit -qm mine")
		r := dev.run(call{dir: ws}, "fetch", id)
		if r.code != 0 || !strings.Contains(r.stdout, "its 2 commit(s)") {
			t.Fatalf("%v", r)
		}
		if out := dev.run(call{dir: ws}, "merge", id); out.code != 0 {
			t.Fatalf("%v", out)
		}
		if log := gitLog(t, ws); log != "Bob second: two\nAda first: one\nDev mine\nt init\n" {
			t.Errorf("history after tine merge of a fetch onto a moved HEAD:\n%s", log)
		}
	})
	t.Run("NoBase", func(t *testing.T) {
		ws := dev.workspaceDir("nobase")
		hostSh(t, ws, `git init -q -b main . && echo hello > a.txt && git add a.txt && git -c user.name=o -c user.email=o@o commit -qm other`)
		dev.ok("init", ws)
		r := dev.run(call{dir: ws}, "fetch", id)
		if r.code != 0 || !strings.Contains(r.stderr, "does not have commit") || !strings.Contains(r.stderr, "not replayed") {
			t.Fatalf("%v\nwant a warning that the commits are not replayed", r)
		}
		if out := dev.run(call{dir: ws}, "merge", id); out.code != 0 {
			t.Fatalf("%v", out)
		}
		if log := gitLog(t, ws); log != "o other\n" {
			t.Errorf("history: %q", log)
		}
		for _, f := range []string{"one.txt", "two.txt", "wip.txt"} {
			if _, err := os.Stat(filepath.Join(ws, f)); err != nil {
				t.Errorf("the winner's %s after the patch's merge: %v", f, err)
			}
		}
	})
}

// TestFleet_UserThroughDaemon: a normal user (tineuser) works with the
// fleet through the system daemon, itself a node: they submit a task,
// see it and not root's in tine tasks, fetch its winner into their own
// workspace (the fork's files theirs) and merge it, commits and all;
// root's task is not found for them. Before, tine tasks and tine fetch
// opened the fleet's database themselves, which a normal user without
// TINE_FLEET_URL has not.
func TestFleet_UserThroughDaemon(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	url := pgtest.URL(t)
	e := newEnv(t)
	e.vars = append(e.vars, "TINE_STORE_URL="+url)
	sock := filepath.Join(publicDir(t), "tine.sock")
	e.serveWith([]string{"TINE_DAEMON_SOCKET=" + sock}, "--system", "--node", "nu", "--heartbeat", "300ms")
	ann := asUser(t, "tineuser", sock)

	dir := filepath.Join(publicDir(t), "app")
	os.Mkdir(dir, 0o755)
	hostSh(t, dir, `git init -q -b main . && echo hello > a.txt && git add a.txt && git -c user.name=t -c user.email=t@t commit -qm init`)
	hostCmd(t, dir, "chown", "-R", "tineuser:", ".")
	e.ws = append(e.ws, dir)

	mine := strings.TrimSpace(ann.ok(dir, "submit", "--repo", ".", "--command", commitsAgent, "-n", "1"))
	roots := strings.TrimSpace(e.ok("submit", "--repo", dir, "--command", "echo r > r.txt", "-n", "1"))
	waitTasks(t, e, 2, 3*time.Minute)

	var st fleetStatus
	ann.okJSON(dir, &st, "tasks", "--json")
	if len(st.Tasks) != 1 || st.Tasks[0].ID != mine || st.Tasks[0].Owner != "tineuser" || st.Tasks[0].OwnerUID != ann.uid {
		t.Fatalf("tineuser's tine tasks: %+v; want their task %s alone, theirs", st.Tasks, mine)
	}
	requireOneLineError(t, ann.tine(dir, nil, "fetch", roots), exitNotFound)
	requireOneLineError(t, ann.tine(dir, nil, "tasks", "cancel", roots), exitNotFound) // root's: not theirs to see
	requireOneLineError(t, ann.tine(dir, nil, "tasks", "cancel", mine), exitState)     // theirs, ended

	ann.ok(dir, "init", ".")
	if out := ann.ok(dir, "fetch", mine); !strings.Contains(out, "its 2 commit(s) and files") {
		t.Fatalf("tineuser's tine fetch: %q", out)
	}
	var rows []runRow
	ann.okJSON(dir, &rows, "ls", "--json")
	for _, row := range rows {
		if row.Name != mine {
			continue
		}
		for _, f := range []string{"one.txt", "wip.txt", ".git/index", ".git/HEAD"} {
			if uid := uidOf(t, filepath.Join(row.Path, f)); uid != ann.uid {
				t.Errorf("the fetched fork's %s belongs to uid %d, want tineuser's %d", f, uid, ann.uid)
			}
		}
	}
	ann.ok(dir, "merge", mine)
	if log := gitLog(t, dir); log != "Bob second: two\nAda first: one\nt init\n" {
		t.Errorf("tineuser's history after tine merge:\n%s", log)
	}
	if uid := uidOf(t, filepath.Join(dir, "two.txt")); uid != ann.uid {
		t.Errorf("two.txt merged into tineuser's workspace belongs to uid %d", uid)
	}
}
