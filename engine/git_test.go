package engine

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine"
)

// revParse is what git says HEAD is in dir ("" when it names no commit).
func revParse(dir string) string {
	out, err := exec.Command("git", "-C", dir, "rev-parse", "--verify", "-q", "HEAD").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// TestGitHead_ReadsWhatGitSays: a fork recorded its commit by starting
// git rev-parse (a few milliseconds of every fork); gitHead now reads
// HEAD and the ref it names itself. In every shape of repository it
// answers what git answers, reading the files itself where they are the
// plain kind and asking git where they are not.
func TestGitHead_ReadsWhatGitSays(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	ctx := context.Background()
	commit := func(dir, name string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
		git(t, dir, "add", "-A")
		git(t, dir, "commit", "-qm", name)
	}
	repo := func(args ...string) string {
		dir := t.TempDir()
		git(t, dir, append([]string{"init", "-q"}, args...)...)
		return dir
	}
	type shape struct {
		name  string
		dir   string
		plain bool // read from the files, without git
	}
	var shapes []shape
	add := func(name, dir string, plain bool) { shapes = append(shapes, shape{name, dir, plain}) }

	add("no commit yet", repo(), true)
	loose := repo()
	commit(loose, "a")
	add("a branch's loose ref", loose, true)
	packed := repo()
	commit(packed, "a")
	git(t, packed, "checkout", "-qb", "feature/x")
	commit(packed, "b")
	git(t, packed, "pack-refs", "--all")
	add("a packed ref below a directory", packed, true)
	detached := repo()
	commit(detached, "a")
	commit(detached, "b")
	git(t, detached, "checkout", "-q", "HEAD~1")
	add("a detached HEAD", detached, true)
	unborn := repo()
	commit(unborn, "a")
	git(t, unborn, "checkout", "-q", "--orphan", "fresh")
	add("an orphan branch after commits", unborn, true)
	sha256 := repo("--object-format=sha256")
	commit(sha256, "a")
	add("SHA-256 objects", sha256, true)
	wt := filepath.Join(t.TempDir(), "wt")
	git(t, loose, "worktree", "add", "-q", "-b", "other", wt)
	add("a worktree's .git file", wt, false)

	for _, s := range shapes {
		t.Run(s.name, func(t *testing.T) {
			want := revParse(s.dir)
			if got := gitHead(ctx, s.dir); got != want {
				t.Errorf("gitHead = %q, git rev-parse says %q", got, want)
			}
			h, ok := readHead(s.dir)
			if ok != s.plain {
				t.Errorf("readHead ok = %v, want %v", ok, s.plain)
			}
			if ok && h != want {
				t.Errorf("readHead = %q, git rev-parse says %q", h, want)
			}
		})
	}
	if got := gitHead(ctx, t.TempDir()); got != "" {
		t.Errorf("gitHead of a directory with no .git = %q", got)
	}
}

// TestReadHead_RefusesWhatItCannotRead: HEAD naming a ref outside refs/,
// with a .. in it, or content that is not an object name, is never read
// as a path or taken for a commit; nor is a file reached through a
// symbolic link (a fork's .git is its own: it could point a ref at a file
// of the host's). git is asked then (and says no).
func TestReadHead_RefusesWhatItCannotRead(t *testing.T) {
	hash := strings.Repeat("ab", 20)
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, head := range []string{"ref: ../../etc/passwd", "ref: refs/../../x", "ref: HEAD", "ref: refs/heads//x", "not a hash", strings.Repeat("g", 40)} {
		dir := t.TempDir()
		write(filepath.Join(dir, ".git", "HEAD"), head+"\n")
		if h, ok := readHead(dir); ok || h != "" && isObjectName(h) {
			t.Errorf("HEAD %q: readHead = %q, %v; want git asked", head, h, ok)
		}
	}
	outside := filepath.Join(t.TempDir(), "secret")
	write(outside, hash+"\n")
	for name, link := range map[string]string{"a loose ref": "refs/heads/main", "HEAD": "HEAD", "packed-refs": "packed-refs", "a directory of refs": "refs/heads"} {
		dir := t.TempDir()
		if link != "HEAD" {
			write(filepath.Join(dir, ".git", "HEAD"), "ref: refs/heads/main\n")
		}
		target := outside
		if link == "packed-refs" {
			write(outside+"-packed", hash+" refs/heads/main\n")
			target = outside + "-packed"
		}
		if link == "refs/heads" {
			write(filepath.Join(filepath.Dir(outside), "heads", "main"), hash+"\n")
			target = filepath.Join(filepath.Dir(outside), "heads")
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, ".git", link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, ".git", link)); err != nil {
			t.Fatal(err)
		}
		if h, ok := readHead(dir); ok || h == hash {
			t.Errorf("%s a symbolic link out of .git: readHead = %q, %v; want git asked", name, h, ok)
		}
	}
}

// TestFork_RecordsTheCommitOfItsView: the fork point's commit, read from
// the files of the run's view (an overlay mount on Linux as root), is the
// one git names there: for the source with loose refs, after its refs
// are packed and a commit made on another branch, and for a fork of a
// fork, whose .git is in the fork's own view.
func TestFork_RecordsTheCommitOfItsView(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	for _, be := range backends(t) {
		t.Run(be, func(t *testing.T) {
			f := newFixture(t, be)
			git(t, f.path, "init", "-q")
			git(t, f.path, "add", "-A")
			git(t, f.path, "commit", "-qm", "first")
			check := func(what, dir string, r *tine.Run) {
				t.Helper()
				want := revParse(dir)
				if want == "" || r.GitHead != want {
					t.Errorf("%s: recorded commit %q, git in its view says %q", what, r.GitHead, want)
				}
				if h, ok := readHead(dir); !ok || h != want { // read from the view's files, git not asked
					t.Errorf("%s: readHead of the view = %q, %v; want %q read from its files", what, h, ok, want)
				}
			}
			check("a fork of the source, loose refs", f.path, f.fork(1).Forks[0])
			git(t, f.path, "checkout", "-qb", "topic/x")
			writeFiles(t, f.path, map[string]string{"a.txt": "topic\n"})
			git(t, f.path, "commit", "-qam", "topic")
			git(t, f.path, "pack-refs", "--all")
			first := f.fork(1).Forks[0]
			check("a fork of the source, packed refs", f.path, first)
			view := f.view(first)
			writeFiles(t, view, map[string]string{"a.txt": "in the fork\n"})
			git(t, view, "commit", "-qam", "in the fork")
			res, err := f.e.Fork(f.ctx, first.ID, ForkOptions{Copies: 1})
			if err != nil {
				t.Fatal(err)
			}
			check("a fork of the fork", view, res.Forks[0])
		})
	}
}
