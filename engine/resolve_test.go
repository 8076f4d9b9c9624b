package engine

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/merge"
)

// treeHash hashes every path, mode, link target and content under root.
func treeHash(t *testing.T, root string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%q %v\n", rel, fi.Mode())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			fmt.Fprintf(h, "-> %q\n", target)
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func TestEngine_MergeFilesystemKeepsConcurrentEdits(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be, func(t *testing.T) {
			f := newFixture(t, be)
			fork := f.fork(1).Forks[0]
			writeFiles(t, f.view(fork), map[string]string{"a.txt": "fork\n", "new/n.txt": "new\n"})
			if err := os.Remove(filepath.Join(f.view(fork), "dir/b.txt")); err != nil {
				t.Fatal(err)
			}
			writeFiles(t, f.path, map[string]string{"dir/sub/c.txt": "source kept working\n"})

			dry, err := f.e.Merge(f.ctx, fork.ID, MergeOptions{DryRun: true})
			if err != nil || !dry.Plan.Clean() || dry.Applied {
				t.Fatalf("dry run: %+v, %v", dry, err)
			}
			if got := readFile(t, filepath.Join(f.path, "a.txt")); got != "alpha\n" {
				t.Fatalf("dry run wrote: %q", got)
			}
			res, err := f.e.Merge(f.ctx, fork.ID, MergeOptions{})
			if err != nil || !res.Applied {
				t.Fatalf("Merge: %+v, %v", res, err)
			}
			want := map[string]string{"a.txt": "fork\n", "new/n.txt": "new\n", "dir/sub/c.txt": "source kept working\n"}
			for name, content := range want {
				if got := readFile(t, filepath.Join(f.path, name)); got != content {
					t.Errorf("%s = %q, want %q", name, got, content)
				}
			}
			if _, err := os.Stat(filepath.Join(f.path, "dir/b.txt")); !os.IsNotExist(err) {
				t.Errorf("deletion not merged: %v", err)
			}
			if r := f.run(fork.ID); r.Run.Resolution != tine.ResolutionMerged {
				t.Errorf("resolution %q", r.Run.Resolution)
			}
			if _, err := f.e.Discard(f.ctx, fork.ID, false); err != nil {
				t.Errorf("discard after merge needs no force: %v", err)
			}
		})
	}
}

func TestEngine_MergeConflictWritesNothing(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be, func(t *testing.T) {
			f := newFixture(t, be)
			fork := f.fork(1).Forks[0]
			writeFiles(t, f.view(fork), map[string]string{"a.txt": "fork\n", "other.txt": "o\n"})
			writeFiles(t, f.path, map[string]string{"a.txt": "source\n"})
			before := treeHash(t, f.path)
			res, err := f.e.Merge(f.ctx, fork.ID, MergeOptions{Scope: ScopeFilesystem})
			if !errors.Is(err, merge.ErrConflict) {
				t.Fatalf("Merge = %v, want ErrConflict", err)
			}
			if c := res.Plan.Conflicts(); len(c) != 1 || c[0].Path != "a.txt" {
				t.Errorf("conflicts %+v", c)
			}
			if after := treeHash(t, f.path); after != before {
				t.Error("a conflicting merge changed the target")
			}
			res, err = f.e.Merge(f.ctx, fork.ID, MergeOptions{Paths: []string{"other.txt"}})
			if err != nil || len(res.Plan.Entries) != 1 {
				t.Fatalf("paths merge: %+v, %v", res, err)
			}
			if got := readFile(t, filepath.Join(f.path, "other.txt")); got != "o\n" {
				t.Errorf("other.txt = %q", got)
			}
			if _, err := f.e.Merge(f.ctx, fork.ID, MergeOptions{Paths: []string{"../etc"}}); !errors.Is(err, tine.ErrInvalid) {
				t.Errorf("escaping path: %v", err)
			}
		})
	}
}

func TestEngine_MergeGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("requires git")
	}
	for _, be := range backends(t) {
		t.Run(be, func(t *testing.T) {
			home, path := t.TempDir(), filepath.Join(t.TempDir(), "repo")
			writeFiles(t, path, map[string]string{"a.txt": "alpha\n", "b.txt": "beta\n", "dir/b.txt": "beta\n", "dir/sub/c.txt": "gamma\n"})
			git(t, path, "init", "-q")
			git(t, path, "add", "-A")
			git(t, path, "commit", "-qm", "base")
			f := newFixtureAt(t, be, home, path)
			fork := f.fork(1).Forks[0]
			if fork.GitHead == "" {
				t.Fatal("fork point HEAD not recorded")
			}
			view := f.view(fork)
			writeFiles(t, view, map[string]string{"a.txt": "alpha\ncommitted\n"})
			git(t, view, "commit", "-qam", "in the fork")
			writeFiles(t, view, map[string]string{"untracked.txt": "u\n"})
			if err := os.Remove(filepath.Join(view, "b.txt")); err != nil {
				t.Fatal(err)
			}
			res, err := f.e.Merge(f.ctx, fork.ID, MergeOptions{})
			if err != nil || res.Plan.Scope != "git" || !res.Applied {
				t.Fatalf("Merge: %+v, %v", res.Plan, err)
			}
			if got := readFile(t, filepath.Join(path, "a.txt")); got != "alpha\ncommitted\n" {
				t.Errorf("a.txt = %q", got)
			}
			if got := readFile(t, filepath.Join(path, "untracked.txt")); got != "u\n" {
				t.Errorf("untracked.txt = %q", got)
			}
			if _, err := os.Stat(filepath.Join(path, "b.txt")); !os.IsNotExist(err) {
				t.Errorf("b.txt not deleted: %v", err)
			}
		})
	}
}

// git runs git in dir for a test, failing it on error, and returns the
// trimmed output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "safe.directory=*", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestEngine_Promote(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be, func(t *testing.T) {
			f := newFixture(t, be)
			fork := f.fork(1).Forks[0]
			writeFiles(t, f.view(fork), map[string]string{"a.txt": "promoted\n"})
			writeFiles(t, f.path, map[string]string{"dir/b.txt": "source edit\n"})
			if _, err := f.e.Promote(f.ctx, fork.ID, false); !errors.Is(err, tine.ErrUnmerged) {
				t.Fatalf("Promote with source changes: %v, want ErrUnmerged", err)
			}
			if got := readFile(t, filepath.Join(f.path, "a.txt")); got != "alpha\n" {
				t.Fatalf("refused promote changed the source: %q", got)
			}
			// Carry the source's edit into the fork; then promotion is allowed.
			writeFiles(t, f.view(fork), map[string]string{"dir/b.txt": "source edit\n"})
			res, err := f.e.Promote(f.ctx, fork.ID, false)
			if err != nil {
				t.Fatalf("Promote: %v", err)
			}
			if res.Run.Name != "source" || res.Run.Role != tine.RoleSource || res.Retired.Role != tine.RoleRetired {
				t.Errorf("roles: new %s/%s, old %s/%s", res.Run.Name, res.Run.Role, res.Retired.Name, res.Retired.Role)
			}
			if got := readFile(t, filepath.Join(f.path, "a.txt")); got != "promoted\n" {
				t.Errorf("workspace a.txt = %q, want the promoted fork's", got)
			}
			if r := f.run("source"); r.Run.ID != fork.ID {
				t.Errorf("name source resolves to %s, want %s", r.Run.ID, fork.ID)
			}
			// The promoted source keeps working at the workspace path.
			writeFiles(t, f.path, map[string]string{"after.txt": "x"})
			f.reopen()
			if got := readFile(t, filepath.Join(f.path, "after.txt")); got != "x" {
				t.Errorf("after reopen: %q", got)
			}
		})
	}
}

func TestEngine_CompareAndChoose(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be, func(t *testing.T) {
			f := newFixture(t, be)
			res := f.fork(3)
			small, big, clash := res.Forks[0], res.Forks[1], res.Forks[2]
			writeFiles(t, f.view(small), map[string]string{"a.txt": "alpha\nsmall\n"})
			writeFiles(t, f.view(big), map[string]string{"a.txt": "1\n2\n3\n4\n", "more.txt": "m\nm\n"})
			writeFiles(t, f.view(clash), map[string]string{"dir/b.txt": "clash\n"})
			writeFiles(t, f.path, map[string]string{"dir/b.txt": "source\n"})
			cmp, err := f.e.Compare(f.ctx, res.Group.ID)
			if err != nil {
				t.Fatal(err)
			}
			if cmp.Recommended != small.ID {
				t.Errorf("recommended %s, want %s (%s)", cmp.Recommended, small.ID, cmp.Rationale)
			}
			for _, fs := range cmp.Forks {
				if fs.Run.ID == clash.ID && (fs.Ready || len(fs.Conflicts) != 1) {
					t.Errorf("clashing fork: ready=%v conflicts=%v", fs.Ready, fs.Conflicts)
				}
				if fs.Run.ID == small.ID && (fs.LinesAdded != 1 || fs.LinesDeleted != 0) {
					t.Errorf("small: +%d -%d", fs.LinesAdded, fs.LinesDeleted)
				}
			}
			ch, err := f.e.Choose(f.ctx, res.Group.ID, small.ID, ChooseOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(ch.Discarded) != 2 {
				t.Errorf("discarded %d, want 2", len(ch.Discarded))
			}
			if got := readFile(t, filepath.Join(f.path, "a.txt")); got != "alpha\nsmall\n" {
				t.Errorf("a.txt = %q", got)
			}
		})
	}
}

func TestEngine_ChooseFailureDiscardsNothing(t *testing.T) {
	f := newFixture(t, "copy")
	res := f.fork(2)
	writeFiles(t, f.view(res.Forks[0]), map[string]string{"a.txt": "fork\n"})
	writeFiles(t, f.path, map[string]string{"a.txt": "source\n"})
	if _, err := f.e.Choose(f.ctx, res.Group.ID, res.Forks[0].ID, ChooseOptions{}); !errors.Is(err, merge.ErrConflict) {
		t.Fatalf("Choose = %v, want ErrConflict", err)
	}
	for _, r := range res.Forks {
		if got := f.run(r.ID); !got.Run.Active() {
			t.Errorf("%s was discarded although the chosen merge failed", r.Name)
		}
	}
}
