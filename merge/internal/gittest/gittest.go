// Package gittest builds the git repositories that the tests of merge's
// git scope plan in: a committed fork point and two copies of it, the run
// (theirs) and the target (ours).
package gittest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/merge/internal/plan"
)

// Git runs git in dir for a test, with a fixed identity and no user config,
// and returns its output trimmed.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main", "-c", "gc.auto=0"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// Write writes files under dir, making parent directories.
func Write(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// Lines returns n numbered lines, line i replaced by repl[i] when given.
func Lines(n int, repl map[int]string) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if r, ok := repl[i]; ok {
			b.WriteString(r + "\n")
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// Pair makes a repository with files committed and two copies of it (cp -a)
// to act as the run (theirs) and the target (ours), and returns them with
// the commit they share. The repository itself, the fork point's files, is
// Base(theirs).
func Pair(t testing.TB, files map[string]string) (theirs, ours, head string) {
	t.Helper()
	root := t.TempDir()
	a := filepath.Join(root, "a")
	if err := os.Mkdir(a, 0o755); err != nil {
		t.Fatal(err)
	}
	Git(t, a, "init", "-q")
	Write(t, a, files)
	Git(t, a, "add", "-A")
	Git(t, a, "commit", "-qm", "base")
	theirs, ours = filepath.Join(root, "theirs"), filepath.Join(root, "ours")
	for _, dst := range []string{theirs, ours} {
		if out, err := exec.Command("cp", "-a", a, dst).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v: %s", err, out)
		}
	}
	return theirs, ours, Git(t, a, "rev-parse", "HEAD")
}

// Base returns the fork point's files of the run theirs that Pair made.
func Base(theirs string) string { return filepath.Join(filepath.Dir(theirs), "a") }

// Fork is Pair whose fork point (Base, theirs and ours alike) holds
// uncommitted work: files written after the commit.
func Fork(t testing.TB, committed, uncommitted map[string]string) (theirs, ours, head string) {
	t.Helper()
	theirs, ours, head = Pair(t, committed)
	for _, d := range []string{Base(theirs), theirs, ours} {
		Write(t, d, uncommitted)
	}
	return theirs, ours, head
}

// Changed returns the paths where theirs differs from base, as the run's
// layer changes name them (fstree.Diff).
func Changed(t testing.TB, base, theirs string) []string {
	t.Helper()
	changes, err := fstree.Diff(context.Background(), base, theirs)
	if err != nil {
		t.Fatal(err)
	}
	paths := make([]string, len(changes))
	for i, c := range changes {
		paths[i] = c.Path
	}
	return paths
}

// Tree describes every file and symbolic link under root but .git and the
// paths skip names: type, permissions and content (or link target).
func Tree(t testing.TB, root string, skip ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		for _, s := range append(skip, ".git") {
			if rel == s || strings.HasPrefix(rel, s+"/") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		fi, err := d.Info()
		if err != nil || d.IsDir() {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			out[rel] = "symlink " + target
			return err
		}
		data, err := os.ReadFile(p)
		out[rel] = fmt.Sprintf("file %v %q", fi.Mode().Perm(), data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Entries indexes a plan's entries by path.
func Entries(p *plan.Plan) map[string]plan.Entry {
	out := map[string]plan.Entry{}
	for _, e := range p.Entries {
		out[e.Path] = e
	}
	return out
}

// Must fails the test on err.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
