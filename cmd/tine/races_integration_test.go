//go:build linux

package main

// A fork owns its view and can turn a directory in it into a symlink to a
// host path, and back, while tine reads it on the host. These tests play
// that fork (testkit.Flip swaps a directory of a fork's view with a
// symlink to a directory only root can read, over and over) while the
// real tine reads the fork, and check that what the host prints or writes
// never holds the hidden file's content.

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/internal/mnt"
	"github.com/tinehq/tine/internal/testkit"
	"golang.org/x/sys/unix"
)

// raceBudget bounds each racing test's loop; raceRounds is how many rounds
// it tries within it.
const (
	raceBudget = 40 * time.Second
	raceRounds = 100
)

// raceFork inits a workspace, forks it and gives the fork a directory dir
// holding the file "secret" (its own content), which Flip then swaps with
// hidden; it returns the fork's name and where dir is on the host.
func raceFork(e *env, ws, dir string) (fork string, flipped string) {
	e.t.Helper()
	var f jsonFork
	e.okJSON(&f, "fork", "source", "--json")
	fork = f.Forks[0].Name
	flipped = filepath.Join(e.path(fork), dir)
	if err := os.Mkdir(flipped, 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(flipped, "secret"), []byte("the fork's own\n"), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return fork, flipped
}

// raceWorkspace makes and inits a workspace holding one file, committed
// in a git repository when git.
func raceWorkspace(e *env, git bool) string {
	e.t.Helper()
	ws := e.workspaceDir("ws")
	if err := os.WriteFile(filepath.Join(ws, "readme"), []byte("hello\n"), 0o644); err != nil {
		e.t.Fatal(err)
	}
	if git {
		hostSh(e.t, ws, "git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm init")
	}
	e.ok("init", "--backend", "overlay", ws)
	return ws
}

// rounds runs round up to raceRounds times within raceBudget and returns
// how many ran.
func rounds(round func(i int)) int {
	start, n := time.Now(), 0
	for ; n < raceRounds && time.Since(start) < raceBudget; n++ {
		round(n)
	}
	return n
}

// TestRace_DiffPatch: tine diff --patch of a fork flipping a directory to
// a symlink at a hidden host path never prints the hidden file.
func TestRace_DiffPatch(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	raceWorkspace(e, false)
	hidden, marker := testkit.Hidden(t, "secret")
	fork, dir := raceFork(e, "", "d")
	stop := testkit.Flip(t, map[string]string{dir: hidden})
	leaks := 0
	n := rounds(func(int) {
		if r := e.tine("diff", fork, "--patch"); strings.Contains(r.stdout+r.stderr, marker) {
			leaks++
		}
	})
	t.Logf("%d patches, %d swaps", n, stop())
	if leaks > 0 {
		t.Fatalf("%d of %d patches printed the hidden file", leaks, n)
	}
}

// TestRace_Export: tine export reads a fork's files for its line counts
// and merge readiness; a fork flipping a directory to a hidden host path
// never has the hidden file counted (50 lines; the fork's own has 1).
func TestRace_Export(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	raceWorkspace(e, false)
	hidden, marker := testkit.Hidden(t, "secret")
	var f jsonFork
	e.okJSON(&f, "fork", "source", "--json")
	dir := filepath.Join(e.path(f.Forks[0].Name), "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("the fork's own\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stop := testkit.Flip(t, map[string]string{dir: hidden})
	leaks := 0
	n := rounds(func(int) {
		r := e.tine("export", f.Group.ID, "--format", "json")
		var x struct {
			Comparison struct {
				Forks []struct {
					LinesAdded int `json:"lines_added"`
				} `json:"forks"`
			} `json:"comparison"`
		}
		if json.Unmarshal([]byte(r.stdout), &x) != nil || len(x.Comparison.Forks) != 1 {
			t.Fatalf("%v", r)
		}
		if x.Comparison.Forks[0].LinesAdded > 1 || strings.Contains(r.stdout, marker) {
			leaks++
		}
	})
	t.Logf("%d exports, %d swaps", n, stop())
	if leaks > 0 {
		t.Fatalf("%d of %d exports counted the hidden file", leaks, n)
	}
}

// TestRace_Merge: merging a fork (filesystem, paths and git scopes) that flips
// a directory to a hidden host path while the merge plans and stages never
// carries the hidden file into the target.
func TestRace_Merge(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	for _, scope := range []string{"filesystem", "paths", "git"} {
		t.Run(scope, func(t *testing.T) {
			e := newEnv(t)
			ws := raceWorkspace(e, scope == "git")
			hidden, marker := testkit.Hidden(t, "secret")
			merged := 0
			n := rounds(func(i int) {
				name := "d" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + string(rune('a'+i/26))
				fork, dir := raceFork(e, ws, name)
				stop := testkit.Flip(t, map[string]string{dir: hidden})
				args := []string{"merge", fork, "--filesystem"}
				switch scope {
				case "paths":
					args = []string{"merge", fork, "--paths", name}
				case "git":
					args = []string{"merge", fork, "--git"}
				}
				r := e.tine(args...)
				stop()
				if r.code == 0 {
					merged++
				}
				if strings.Contains(r.stdout+r.stderr, marker) {
					t.Fatalf("round %d: the merge printed the hidden file: %v", i, r)
				}
				e.tine("discard", fork)
			})
			if p := findMarker(t, ws, marker); p != "" {
				t.Fatalf("after %d merges the workspace holds the hidden file at %s", n, p)
			}
			t.Logf("%d merges, %d applied", n, merged)
			if merged == 0 {
				t.Fatalf("none of %d merges applied: the race was never run", n)
			}
		})
	}
}

// findMarker returns the first regular file under root holding marker, or "".
func findMarker(t *testing.T, root, marker string) string {
	t.Helper()
	var found string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || found != "" || !d.Type().IsRegular() {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), marker) {
			found = p
		}
		return nil
	})
	return found
}

// TestRace_InitSwap: tineuser inits a directory of theirs through the
// system daemon (root's) while swapping it, over and over, with a symlink
// to a directory of root's. The daemon must never take root's files (nor
// mount over root's directory), and none of root's files may ever land in
// the user's directory. (Before, the owner was checked on the path, then
// the files imported by the path again.)
func TestRace_InitSwap(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	sock := filepath.Join(publicDir(t), "tine.sock")
	e.serveWith([]string{"TINE_DAEMON_SOCKET=" + sock}, "--system")
	ann := asUser(t, "tineuser", sock)

	roots := filepath.Join(publicDir(t), "roots")
	if err := os.Mkdir(roots, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(roots, "rootfile"), []byte("root's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	parent := publicDir(t)
	os.Chown(parent, ann.uid, ann.gid)
	swap := filepath.Join(parent, "swap")
	if err := os.Mkdir(swap, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(swap, "mine"), []byte("the user's\n"), 0o644)
	for _, p := range []string{swap, filepath.Join(swap, "mine")} {
		os.Chown(p, ann.uid, ann.gid)
	}
	e.ws = append(e.ws, swap)
	inits := 0
	n := rounds(func(i int) {
		stop := testkit.Flip(t, map[string]string{swap: roots})
		r := ann.tine(parent, nil, "init", swap)
		stop()
		if fi, err := os.Lstat(swap); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			// The init's mount landed on the user's directory while it was
			// named swap.flip: the flip stopped there. Put it back.
			mnt.UnmountAll(swap + ".flip")
			if err := unix.Renameat2(unix.AT_FDCWD, swap, unix.AT_FDCWD, swap+".flip", unix.RENAME_EXCHANGE); err != nil {
				t.Fatal(err)
			}
		}
		os.Remove(swap + ".flip")
		if r.code == 0 {
			inits++
		}
		if ok, _ := mnt.IsMountpoint(roots); ok {
			mnt.UnmountAll(roots)
			t.Fatalf("round %d: the daemon mounted over root's directory: %v", i, r)
		}
		if names := dirNames(t, roots); len(names) != 1 || names[0] != "rootfile" {
			t.Fatalf("round %d: root's directory holds %v, want only rootfile: %v", i, names, r)
		}
		if fileExists(filepath.Join(swap, "rootfile")) {
			t.Fatalf("round %d: root's file landed in the user's directory: %v", i, r)
		}
		if r.code == 0 {
			ann.ok(parent, "release", swap)
		}
	})
	t.Logf("%d inits, %d took", n, inits)
}

// TestRace_ForkRunEvidence: fork-run's evidence copies a fork's changed
// test files into a scratch copy of the fork point and runs the tests
// there; a fork flipping the directory holding its test to a symlink at a
// hidden host path while the evidence is gathered never has the hidden
// file copied in (the test prints what it was given, into the report).
func TestRace_ForkRunEvidence(t *testing.T) {
	e, _ := forkRunWorkspace(t, "")
	hidden, marker := testkit.Hidden(t, "x_test.sh")
	// The agent writes its test, then waits for the flipper to start.
	agent := `mkdir t && echo own > t/x_test.sh && for i in $(seq 400); do [ -L t.flip ] || [ -L t ] && break; sleep 0.05; done`
	test := `cat t/x_test.sh t.flip/x_test.sh 2>/dev/null; true`
	gathered, n, seen := 0, 0, map[string]bool{}
	for start := time.Now(); n < 8 && time.Since(start) < raceBudget; n++ {
		cmd := exec.Command(tineBin, "fork-run", "source", "--json", "--prompt", "p", "-n", "1",
			"--agent-cmd", agent, "--test", test, "--merge-mode", "manual")
		cmd.Env = e.vars
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		stop := flipWhenMade(t, e, seen, hidden)
		err := cmd.Wait()
		stop()
		var rep forkrun.Report
		if json.Unmarshal(out.Bytes(), &rep) != nil || len(rep.Forks) != 1 {
			t.Fatalf("round %d: %v\n%s", n, err, out.String())
		}
		// Only the evidence's copy counts: in its own view the fork, root
		// here, reads what it likes.
		if ev := rep.Forks[0].Evidence; ev != nil && ev.AtForkPoint != nil {
			if strings.Contains(ev.AtForkPoint.Output, marker) {
				t.Fatalf("round %d: the hidden file was copied into the fork's tests: %s", n, ev.AtForkPoint.Output)
			}
			if ev.AtForkPoint.Error == "" {
				gathered++
			}
		}
	}
	t.Logf("%d fork-runs, %d gathered evidence at the fork point", n, gathered)
	if gathered == 0 {
		t.Fatal("no fork-run gathered evidence: the race was never run")
	}
}

// flipWhenMade waits for a fork's view (one not in seen) to hold the
// directory t with x_test.sh, then flips t with a symlink to target
// (testkit.Flip) until stop is called.
func flipWhenMade(t *testing.T, e *env, seen map[string]bool, target string) (stop func() int) {
	t.Helper()
	pattern := filepath.Join(e.home, "workspaces", "*", "runs", "*", "view", "t", "x_test.sh")
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ms, _ := filepath.Glob(pattern)
		for _, m := range ms {
			if dir := filepath.Dir(m); !seen[dir] {
				seen[dir] = true
				return testkit.Flip(t, map[string]string{dir: target})
			}
		}
	}
	t.Fatal("the fork never made its test")
	return nil
}

// TestRace_Promote: promote refuses while the source has changes since
// the fork that the fork lacks, and compares the two to know. A fork
// flipping its directory to a symlink at a hidden host path holding the
// source's new content must never pass for holding that change: before,
// the comparison followed the symlink, the promote went through, and the
// source's change was lost.
func TestRace_Promote(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws := raceWorkspace(e, false)
	hidden, marker := testkit.Hidden(t, "f")
	body, err := os.ReadFile(filepath.Join(hidden, "f"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	refused := 0
	n := rounds(func(i int) {
		if err := os.WriteFile(filepath.Join(ws, "d", "f"), []byte("base\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var f jsonFork
		e.okJSON(&f, "fork", "source", "--json")
		fork := f.Forks[0].Name
		dir := filepath.Join(e.path(fork), "d")
		if err := os.WriteFile(filepath.Join(dir, "f"), []byte("the fork's own\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, "d", "f"), body, 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(ws, "d", "f"), 0o600) // the hidden file's mode, which the comparison checks too
		stop := testkit.Flip(t, map[string]string{dir: hidden})
		r := e.tine("promote", fork)
		stop()
		if r.code == 0 {
			if b, _ := os.ReadFile(filepath.Join(ws, "d", "f")); !strings.Contains(string(b), marker) {
				t.Fatalf("round %d: promote went through and lost the source's change to d/f (now %q): %v", i, b, r)
			}
			return
		}
		refused++
		e.tine("discard", fork)
	})
	t.Logf("%d promotes, %d refused", n, refused)
}
