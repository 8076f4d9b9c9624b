package merge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/layer"
)

// gitT runs git in dir for a test, with a fixed identity and no user config.
func gitT(t testing.TB, dir string, args ...string) string {
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

// gitWrite writes files under dir, making parent directories.
func gitWrite(t testing.TB, dir string, files map[string]string) {
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

// gitLines returns n numbered lines, line i replaced by repl[i] when given.
func gitLines(n int, repl map[int]string) string {
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

// gitPair makes a repository with files committed and two copies of it (cp
// -a) to act as the run (theirs) and the target (ours), and returns them with
// the commit they share.
func gitPair(t testing.TB, files map[string]string) (theirs, ours, head string) {
	t.Helper()
	root := t.TempDir()
	a := filepath.Join(root, "a")
	if err := os.Mkdir(a, 0o755); err != nil {
		t.Fatal(err)
	}
	gitT(t, a, "init", "-q")
	gitWrite(t, a, files)
	gitT(t, a, "add", "-A")
	gitT(t, a, "commit", "-qm", "base")
	theirs, ours = filepath.Join(root, "theirs"), filepath.Join(root, "ours")
	for _, dst := range []string{theirs, ours} {
		if out, err := exec.Command("cp", "-a", a, dst).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v: %s", err, out)
		}
	}
	return theirs, ours, gitT(t, a, "rev-parse", "HEAD")
}

// gitPlanT runs PlanGit with a fresh scratch directory, the fork point's
// files being the repository gitPair made theirs and ours from.
func gitPlanT(t testing.TB, theirs, head, ours string) *Plan {
	t.Helper()
	plan, err := PlanGit(context.Background(), gitOptsT(t, theirs, head, ours, t.TempDir()))
	if err != nil {
		t.Fatalf("PlanGit: %v", err)
	}
	return plan
}

// gitOptsT returns the options of a plan of theirs into ours, with base the
// repository gitPair copied them from and the changes from fstree.Diff.
func gitOptsT(t testing.TB, theirs, head, ours, scratch string) GitOptions {
	t.Helper()
	base := filepath.Join(filepath.Dir(theirs), "a")
	changes, err := fstree.Diff(context.Background(), base, theirs)
	if err != nil {
		t.Fatal(err)
	}
	paths := make([]string, len(changes))
	for i, c := range changes {
		paths[i] = c.Path
	}
	return GitOptions{Theirs: theirs, Base: base, Head: head, Ours: ours, Changed: paths, Scratch: scratch}
}

// gitApplyT is a test-only applier: deletions first, then each upsert copied
// from its Source (files with their permissions, symbolic links as links,
// directories made empty).
func gitApplyT(t *testing.T, plan *Plan, ours string) {
	t.Helper()
	if !plan.Clean() {
		t.Fatalf("applying a plan with conflicts: %+v", plan.Conflicts())
	}
	for _, e := range plan.Entries {
		if e.Action == Take && e.Change == layer.Deleted {
			if err := os.RemoveAll(filepath.Join(ours, e.Path)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, e := range plan.Entries {
		if e.Action != Take || e.Change == layer.Deleted {
			continue
		}
		dst := filepath.Join(ours, e.Path)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(dst); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(e.Source)
		if err != nil {
			t.Fatal(err)
		}
		if fi.IsDir() {
			if err := os.Mkdir(dst, fi.Mode().Perm()); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(e.Source)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, dst); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := gitCopyFile(e.Source, dst, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

// gitTreeT describes every file and symbolic link under root but .git and the
// paths skip names: type, permissions and content (or link target).
func gitTreeT(t *testing.T, root string, skip ...string) map[string]string {
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

// gitDirSum hashes everything in a repository's .git directory: names,
// modes, contents and modification times.
func gitDirSum(t *testing.T, repo string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(filepath.Join(repo, ".git"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %v %d\n", p, fi.Mode(), fi.ModTime().UnixNano())
		if fi.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			h.Write(data)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// gitCountObjects counts the loose objects and packs of a repository.
func gitCountObjects(t *testing.T, repo string) string {
	return gitT(t, repo, "count-objects")
}

// gitEntries indexes a plan's entries by path.
func gitEntries(plan *Plan) map[string]Entry {
	out := map[string]Entry{}
	for _, e := range plan.Entries {
		out[e.Path] = e
	}
	return out
}

func gitBaseFiles() map[string]string {
	return map[string]string{
		"keep.txt":        "keep\n",
		"edit.txt":        gitLines(20, nil),
		"shared.txt":      gitLines(20, nil),
		"staged.txt":      "staged\n",
		"del.txt":         "delete me\n",
		"mv-src.txt":      "moved by git mv\n" + gitLines(5, nil),
		"plain-src.txt":   "moved by mv\n" + gitLines(5, nil),
		"run.sh":          "#!/bin/sh\necho hi\n",
		"tc":              "becomes a symlink\n",
		"bin2.dat":        "\x00\x01\x02binary\x00" + strings.Repeat("x", 300),
		".gitignore":      "*.log\nbuild/\n",
		"sub/old.txt":     "old\n",
		"with space.txt":  "space\n",
		"ünïcödé/ö.txt":   "unicode\n",
		"dir/gone/a.txt":  "a\n",
		"dir/gone/b.txt":  "b\n",
		"dir/stays/c.txt": "c\n",
	}
}

// gitChangeTheirs makes every kind of change in theirs.
func gitChangeTheirs(t *testing.T, theirs string) {
	t.Helper()
	gitWrite(t, theirs, map[string]string{
		"untracked.txt":        "new\n",
		"bin.dat":              "\x00\x00\xffbinary\x00data",
		"bin2.dat":             "\x00\x01\x02binary\x00" + strings.Repeat("y", 300),
		"nested/dir/deep.txt":  "deep\n",
		"app.log":              "ignored\n",
		"build/out.o":          "ignored\n",
		".tine-state":          "tine's own\n",
		".tine-dir/x":          "tine's own\n",
		"sub/.tine-kept":       "not at the root: carried\n",
		"with space.txt":       "space changed\n",
		"ünïcödé/ö.txt":        "unicode changed\n",
		"new\nline.txt":        "newline in the name\n",
		"a \"quoted\"\\n name": "quotes\n",
		"staged-new.txt":       "added then moved\n" + gitLines(4, nil),
	})
	gitT(t, theirs, "add", "staged-new.txt")
	gitMust(t, os.Rename(filepath.Join(theirs, "staged-new.txt"), filepath.Join(theirs, "moved-new.txt")))
	gitMust(t, os.Remove(filepath.Join(theirs, "del.txt")))
	gitT(t, theirs, "mv", "mv-src.txt", "mv-dst.txt")
	gitMust(t, os.Rename(filepath.Join(theirs, "plain-src.txt"), filepath.Join(theirs, "plain-dst.txt")))
	gitMust(t, os.Chmod(filepath.Join(theirs, "run.sh"), 0o755))
	gitMust(t, os.Symlink("keep.txt", filepath.Join(theirs, "link")))
	gitMust(t, os.Remove(filepath.Join(theirs, "tc")))
	gitMust(t, os.Symlink("keep.txt", filepath.Join(theirs, "tc")))
	gitMust(t, os.RemoveAll(filepath.Join(theirs, "dir/gone")))
	gitWrite(t, theirs, map[string]string{"dir/gone": "a file now\n"})
	gitWrite(t, theirs, map[string]string{"edit.txt": gitLines(20, map[int]string{3: "committed since"})})
	gitT(t, theirs, "commit", "-qam", "since the fork")
	gitWrite(t, theirs, map[string]string{"staged.txt": "staged change\n"})
	gitT(t, theirs, "add", "staged.txt")
	gitWrite(t, theirs, map[string]string{"shared.txt": gitLines(20, map[int]string{15: "unstaged"})})
}

func gitMust(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestPlanGit_AllKinds(t *testing.T) {
	theirs, ours, head := gitPair(t, gitBaseFiles())
	gitChangeTheirs(t, theirs)
	sumTheirs, sumOurs := gitDirSum(t, theirs), gitDirSum(t, ours)
	objTheirs, objOurs := gitCountObjects(t, theirs), gitCountObjects(t, ours)
	wantTree := gitTreeT(t, theirs, "app.log", "build", ".tine-state", ".tine-dir")
	oursBefore := gitTreeT(t, ours)

	plan := gitPlanT(t, theirs, head, ours)

	if sum := gitDirSum(t, theirs); sum != sumTheirs || gitCountObjects(t, theirs) != objTheirs {
		t.Error("PlanGit changed theirs' .git")
	}
	if sum := gitDirSum(t, ours); sum != sumOurs || gitCountObjects(t, ours) != objOurs {
		t.Error("PlanGit changed ours' .git")
	}
	if got := gitTreeT(t, ours); fmt.Sprint(got) != fmt.Sprint(oursBefore) {
		t.Error("PlanGit changed ours' files")
	}
	if plan.Scope != "git" || !plan.Clean() {
		t.Fatalf("plan: scope %q, conflicts %+v", plan.Scope, plan.Conflicts())
	}
	if !sort.SliceIsSorted(plan.Entries, func(i, j int) bool { return plan.Entries[i].Path < plan.Entries[j].Path }) {
		t.Error("entries not sorted by path")
	}
	gitCheckAllKinds(t, gitEntries(plan))
	gitApplyT(t, plan, ours)
	got := gitTreeT(t, ours)
	for p, want := range wantTree {
		if got[p] != want {
			t.Errorf("%q after apply: got %s, want %s", p, got[p], want)
		}
	}
	for p := range got {
		if _, ok := wantTree[p]; !ok {
			t.Errorf("%q after apply: not in theirs", p)
		}
	}
}

// gitCheckAllKinds checks the entries of the plan made by changeTheirs.
func gitCheckAllKinds(t *testing.T, got map[string]Entry) {
	t.Helper()
	want := map[string]struct {
		change layer.Kind
		typ    string
	}{
		"untracked.txt":        {layer.Added, "file"},
		"bin.dat":              {layer.Added, "file"},
		"bin2.dat":             {layer.Modified, "file"},
		"nested":               {layer.Added, "dir"},
		"nested/dir":           {layer.Added, "dir"},
		"nested/dir/deep.txt":  {layer.Added, "file"},
		"sub/.tine-kept":       {layer.Added, "file"},
		"with space.txt":       {layer.Modified, "file"},
		"ünïcödé/ö.txt":        {layer.Modified, "file"},
		"new\nline.txt":        {layer.Added, "file"},
		"a \"quoted\"\\n name": {layer.Added, "file"},
		"moved-new.txt":        {layer.Added, "file"},
		"del.txt":              {layer.Deleted, "file"},
		"mv-src.txt":           {layer.Deleted, "file"},
		"mv-dst.txt":           {layer.Added, "file"},
		"plain-src.txt":        {layer.Deleted, "file"},
		"plain-dst.txt":        {layer.Added, "file"},
		"run.sh":               {layer.Modified, "file"},
		"link":                 {layer.Added, "symlink"},
		"tc":                   {layer.TypeChanged, "symlink"},
		"dir/gone":             {layer.Added, "file"},
		"dir/gone/a.txt":       {layer.Deleted, "file"},
		"dir/gone/b.txt":       {layer.Deleted, "file"},
		"edit.txt":             {layer.Modified, "file"},
		"staged.txt":           {layer.Modified, "file"},
		"shared.txt":           {layer.Modified, "file"},
	}
	for p, w := range want {
		e, ok := got[p]
		switch {
		case !ok:
			t.Errorf("%q: no entry", p)
		case e.Action != Take || e.Change != w.change || e.Type != w.typ:
			t.Errorf("%q: got %s %s %s, want take %s %s", p, e.Action, e.Change, e.Type, w.change, w.typ)
		case (e.Change == layer.Deleted) != (e.Source == ""):
			t.Errorf("%q: source %q for %s", p, e.Source, e.Change)
		}
	}
	if len(got) != len(want) {
		for p := range got {
			if _, ok := want[p]; !ok {
				t.Errorf("%q: unexpected entry %+v", p, got[p])
			}
		}
	}
	if e := got["bin.dat"]; e.Bytes != int64(len("\x00\x00\xffbinary\x00data")) {
		t.Errorf("bin.dat: %d bytes", e.Bytes)
	}
}

func TestPlanGit_Conflicts(t *testing.T) {
	theirs, ours, head := gitPair(t, gitBaseFiles())
	gitChangeTheirs(t, theirs)
	gitWrite(t, ours, map[string]string{
		"edit.txt":   gitLines(20, map[int]string{3: "ours too"}),
		"shared.txt": gitLines(20, map[int]string{15: "ours as well"}),
	})
	plan := gitPlanT(t, theirs, head, ours)
	conflicts := plan.Conflicts()
	if len(conflicts) != 2 || conflicts[0].Path != "edit.txt" || conflicts[1].Path != "shared.txt" {
		t.Fatalf("conflicts: %+v", conflicts)
	}
	for _, c := range conflicts {
		if !strings.Contains(c.Reason, "patch does not apply") || c.Source != "" {
			t.Errorf("%s: reason %q, source %q", c.Path, c.Reason, c.Source)
		}
	}
	got := gitEntries(plan)
	for _, p := range []string{"untracked.txt", "mv-dst.txt", "tc", "link", "dir/gone"} {
		if e := got[p]; e.Action != Take || e.Source == "" {
			t.Errorf("%q: %+v, want take with a source", p, e)
		} else if _, err := os.Lstat(e.Source); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
}

func TestPlanGit_OursChangedElsewhere(t *testing.T) {
	theirs, ours, head := gitPair(t, gitBaseFiles())
	gitWrite(t, theirs, map[string]string{"edit.txt": gitLines(20, map[int]string{3: "theirs"})})
	gitWrite(t, ours, map[string]string{"edit.txt": gitLines(20, map[int]string{18: "ours"})})
	gitMust(t, os.Chmod(filepath.Join(ours, "edit.txt"), 0o664))
	plan := gitPlanT(t, theirs, head, ours)
	if len(plan.Entries) != 1 || !plan.Clean() {
		t.Fatalf("plan: %+v", plan.Entries)
	}
	gitApplyT(t, plan, ours)
	data, err := os.ReadFile(filepath.Join(ours, "edit.txt"))
	gitMust(t, err)
	if want := gitLines(20, map[int]string{3: "theirs", 18: "ours"}); string(data) != want {
		t.Errorf("edit.txt: got\n%s", data)
	}
	if fi, _ := os.Stat(filepath.Join(ours, "edit.txt")); fi.Mode().Perm() != 0o664 {
		t.Errorf("edit.txt: mode %v, want ours' 0664", fi.Mode())
	}
}

func TestPlanGit_Converged(t *testing.T) {
	theirs, ours, head := gitPair(t, gitBaseFiles())
	for _, dir := range []string{theirs, ours} {
		gitWrite(t, dir, map[string]string{"both.txt": "same\n", "edit.txt": gitLines(20, map[int]string{4: "same change"})})
		gitMust(t, os.Remove(filepath.Join(dir, "del.txt")))
		gitMust(t, os.Symlink("keep.txt", filepath.Join(dir, "link")))
	}
	gitWrite(t, theirs, map[string]string{"only.txt": "theirs\n"})
	plan := gitPlanT(t, theirs, head, ours)
	if !plan.Clean() {
		t.Fatalf("conflicts: %+v", plan.Conflicts())
	}
	got := gitEntries(plan)
	for _, p := range []string{"both.txt", "edit.txt", "del.txt", "link"} {
		if got[p].Action != Converged {
			t.Errorf("%q: %+v, want converged", p, got[p])
		}
	}
	if e := got["only.txt"]; e.Action != Take || e.Change != layer.Added {
		t.Errorf("only.txt: %+v", e)
	}
}

func TestPlanGit_NoChanges(t *testing.T) {
	theirs, ours, head := gitPair(t, gitBaseFiles())
	gitWrite(t, theirs, map[string]string{"app.log": "ignored\n", ".tine-x": "tine\n", ".tine-d/y": "tine\n"})
	plan := gitPlanT(t, theirs, head, ours)
	if plan.Scope != "git" || len(plan.Entries) != 0 || !plan.Clean() {
		t.Fatalf("plan: %+v", plan)
	}
}

func TestPlanGit_Invalid(t *testing.T) {
	theirs, ours, head := gitPair(t, gitBaseFiles())
	notRepo := t.TempDir()
	for name, tc := range map[string]struct{ theirs, head string }{
		"EmptyHead":   {theirs, ""},
		"UnknownHead": {theirs, strings.Repeat("1", 40)},
		"OptionHead":  {theirs, "--all"},
		"TreeHead":    {theirs, head + "^{tree}"},
		"NotRepo":     {notRepo, head},
		"SubDir":      {filepath.Join(theirs, "sub"), head},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := PlanGit(context.Background(), GitOptions{Theirs: tc.theirs, Head: tc.head, Ours: ours, Scratch: t.TempDir()})
			if !errors.Is(err, tine.ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
		})
	}
}

func TestPlanGit_NestedRepository(t *testing.T) {
	theirs, ours, head := gitPair(t, gitBaseFiles())
	inner := filepath.Join(theirs, "inner")
	gitMust(t, os.Mkdir(inner, 0o755))
	gitT(t, inner, "init", "-q")
	gitWrite(t, inner, map[string]string{"f": "f\n"})
	gitT(t, inner, "add", "-A")
	gitT(t, inner, "commit", "-qm", "inner")
	gitWrite(t, theirs, map[string]string{"fine.txt": "fine\n"})
	plan := gitPlanT(t, theirs, head, ours)
	got := gitEntries(plan)
	if e := got["inner"]; e.Action != Conflict || e.Type != "other" || !strings.Contains(e.Reason, "nested") {
		t.Errorf("inner: %+v", e)
	}
	if e := got["fine.txt"]; e.Action != Take {
		t.Errorf("fine.txt: %+v", e)
	}
}

func TestPlanGit_InTheWay(t *testing.T) {
	theirs, ours, head := gitPair(t, gitBaseFiles())
	gitWrite(t, theirs, map[string]string{"x": "file in theirs\n", "y/z": "under a dir\n", "l/m": "under a dir\n"})
	gitWrite(t, ours, map[string]string{"x/inside": "ours has a dir\n", "y": "ours has a file\n"})
	gitMust(t, os.Symlink(t.TempDir(), filepath.Join(ours, "l")))
	// dir/gone becomes a file in theirs while ours added a file inside it.
	gitMust(t, os.RemoveAll(filepath.Join(theirs, "dir/gone")))
	gitWrite(t, theirs, map[string]string{"dir/gone": "a file now\n"})
	gitWrite(t, ours, map[string]string{"dir/gone/ours.txt": "ours\n"})
	plan := gitPlanT(t, theirs, head, ours)
	got := gitEntries(plan)
	for _, p := range []string{"x", "y/z", "l/m", "dir/gone"} {
		if e := got[p]; e.Action != Conflict || e.Reason == "" {
			t.Errorf("%q: %+v, want a conflict", p, e)
		}
	}
	if _, err := os.Lstat(filepath.Join(ours, "l", "m")); err == nil {
		t.Error("wrote through ours' symlink")
	}
}

func TestPlanGit_ScratchInsideRepository(t *testing.T) {
	theirs, ours, head := gitPair(t, gitBaseFiles())
	gitWrite(t, theirs, map[string]string{"edit.txt": gitLines(20, map[int]string{1: "x"}), "new/f": "f\n"})
	outer := t.TempDir()
	gitT(t, outer, "init", "-q")
	scratch := filepath.Join(outer, "sub", "scratch")
	gitMust(t, os.MkdirAll(scratch, 0o755))
	plan, err := PlanGit(context.Background(), gitOptsT(t, theirs, head, ours, scratch))
	gitMust(t, err)
	if len(plan.Entries) != 3 || !plan.Clean() { // edit.txt, new (a directory), new/f
		t.Fatalf("plan: %+v", plan.Entries)
	}
	gitApplyT(t, plan, ours)
	if a, b := gitTreeT(t, ours), gitTreeT(t, theirs); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("ours after apply:\n%v\nwant\n%v", a, b)
	}
}

func TestGitCheckReasons(t *testing.T) {
	stderr := "Checking patch a...\nerror: while searching for:\nx\n\nerror: patch failed: a:1\n" +
		"error: a: patch does not apply\nChecking patch b...\nChecking patch c => d...\nerror: c: No such file or directory\n"
	got, ok := gitCheckReasons(stderr, 3)
	want := []string{"patch failed: a:1; a: patch does not apply", "", "c: No such file or directory"}
	if !ok || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %q %v, want %q", got, ok, want)
	}
	if _, ok := gitCheckReasons(stderr, 2); ok {
		t.Error("3 blocks for 2 sections: ok")
	}
	if _, ok := gitCheckReasons("error: corrupt patch at line 3\n", 1); ok {
		t.Error("an error before any block: ok")
	}
}

func TestGitSplitPatch(t *testing.T) {
	patch := "diff --git a/x b/x\n+diff --git a/y b/y\n diff --git\ndiff --git a/z b/z\nGIT binary patch\nliteral 0\nHcmV?d00001\n"
	got := gitSplitPatch([]byte(patch))
	if len(got) != 2 || !strings.HasPrefix(string(got[1]), "diff --git a/z") || string(got[0])+string(got[1]) != patch {
		t.Errorf("got %q", got)
	}
}

// BenchmarkPlanGit plans a merge of 100 changed files (10 of them added) in
// a repository of 10,000 files. The repository is built once, outside the
// measured sub-benchmark.
func BenchmarkPlanGit(b *testing.B) {
	start := time.Now()
	files := map[string]string{}
	for i := 0; i < 10000; i++ {
		files[gitBenchName(i)] = gitLines(10, map[int]string{1: fmt.Sprint(i)})
	}
	theirs, ours, head := gitPair(b, files)
	for i := 0; i < 100; i++ {
		name := gitBenchName(i)
		if i%10 == 0 {
			name = fmt.Sprintf("new/n%03d.txt", i)
		}
		gitWrite(b, theirs, map[string]string{name: gitLines(10, map[int]string{5: "changed"})})
	}
	b.Logf("building the 10,000-file repository and its two copies: %v", time.Since(start))
	// Cold: theirs' index still has the stat data of the repository it was
	// copied from, as in a fresh run, so git rehashes every file.
	b.Run("Cold", func(b *testing.B) { gitBenchPlan(b, theirs, head, ours) })
	// Warm: theirs' index was refreshed (as git status in the run does).
	gitT(b, theirs, "update-index", "-q", "--refresh")
	b.Run("Warm", func(b *testing.B) { gitBenchPlan(b, theirs, head, ours) })
}

// gitBenchPlan plans the benchmark's merge b.N times.
func gitBenchPlan(b *testing.B, theirs, head, ours string) {
	b.Helper()
	for i := 0; i < b.N; i++ {
		scratch := filepath.Join(b.TempDir(), "scratch")
		gitMust(b, os.Mkdir(scratch, 0o755))
		plan, err := PlanGit(context.Background(), gitOptsT(b, theirs, head, ours, scratch))
		if err != nil {
			b.Fatal(err)
		}
		if len(plan.Entries) != 100 || !plan.Clean() {
			b.Fatalf("%d entries, clean %v", len(plan.Entries), plan.Clean())
		}
	}
}

// gitBenchName names file i of the benchmark's repository.
func gitBenchName(i int) string { return fmt.Sprintf("d%02d/e%02d/f%04d.txt", i%100, i%37, i) }

// gitForkT is gitPair whose fork point (a, theirs and ours alike) holds
// uncommitted work: files written after the commit.
func gitForkT(t *testing.T, committed, uncommitted map[string]string) (theirs, ours, head string) {
	t.Helper()
	theirs, ours, head = gitPair(t, committed)
	for _, d := range []string{filepath.Join(filepath.Dir(theirs), "a"), theirs, ours} {
		gitWrite(t, d, uncommitted)
	}
	return theirs, ours, head
}

// TestPlanGit_UncommittedAtFork is the regression of a false conflict: the
// source had an uncommitted edit to A when it was forked and the run edited
// A further; the base is the fork point's files, so the patch applies.
func TestPlanGit_UncommittedAtFork(t *testing.T) {
	theirs, ours, head := gitForkT(t, map[string]string{"A": "a\n"}, map[string]string{"A": "a\na2\n"})
	gitWrite(t, theirs, map[string]string{"A": "a\na2\na3\n"})
	plan := gitPlanT(t, theirs, head, ours)
	if e := gitEntries(plan)["A"]; e.Action != Take || e.Change != layer.Modified || len(plan.Entries) != 1 {
		t.Fatalf("plan: %+v, want A taken alone", plan.Entries)
	}
	if err := Apply(context.Background(), plan, ours, journalPath(t), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ours, "A")); string(b) != "a\na2\na3\n" {
		t.Errorf("A after apply: %q", b)
	}
}

// TestPlanGit_UncommittedUntouched: work the source had not committed when
// it was forked, and the run did not touch, is not the run's change.
func TestPlanGit_UncommittedUntouched(t *testing.T) {
	theirs, ours, head := gitForkT(t, map[string]string{"A": "a\n", "B": "b\n"}, map[string]string{"A": "a\na2\n"})
	gitWrite(t, ours, map[string]string{"A": "ours since\n"})
	gitWrite(t, theirs, map[string]string{"B": "b2\n"})
	plan := gitPlanT(t, theirs, head, ours)
	if _, ok := gitEntries(plan)["A"]; ok || len(plan.Entries) != 1 || !plan.Clean() {
		t.Fatalf("plan: %+v, want B alone", plan.Entries)
	}
}

// TestPlanGit_NewDirectories is the regression of "openat2 …/newdir: no
// such file or directory": files in directories several levels deep that
// the target lacks are planned with their directories (modes from the run)
// and apply through the real Apply.
func TestPlanGit_NewDirectories(t *testing.T) {
	theirs, ours, head := gitPair(t, map[string]string{"A": "a\n"})
	gitWrite(t, theirs, map[string]string{"newdir/f": "x\n", "n1/n2/n3/deep": "d\n"})
	gitMust(t, os.Chmod(filepath.Join(theirs, "n1", "n2"), 0o750))
	plan := gitPlanT(t, theirs, head, ours)
	got := gitEntries(plan)
	for _, d := range []string{"newdir", "n1", "n1/n2", "n1/n2/n3"} {
		if e := got[d]; e.Action != Take || e.Change != layer.Added || e.Type != "dir" {
			t.Errorf("%s: %+v, want an added directory", d, e)
		}
	}
	if err := Apply(context.Background(), plan, ours, journalPath(t), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if a, b := gitTreeT(t, ours), gitTreeT(t, theirs); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("ours after apply:\n%v\nwant\n%v", a, b)
	}
	if fi, err := os.Stat(filepath.Join(ours, "n1", "n2")); err != nil || fi.Mode().Perm() != 0o750 {
		t.Errorf("n1/n2: %v %v, want mode 0750 as in the run", fi.Mode(), err)
	}
}

// TestPlanGit_RemovedDirectory: a directory the run removed is removed
// from the target as git would, unless the target has files of its own in
// it; a directory replaced by a file works too.
func TestPlanGit_RemovedDirectory(t *testing.T) {
	theirs, ours, head := gitPair(t, map[string]string{"dir/sub/f": "f\n", "dir/g": "g\n", "keep/a": "a\n", "keep/b": "b\n", "d2f/x": "x\n"})
	for _, d := range []string{"dir", "keep", "d2f"} {
		gitMust(t, os.RemoveAll(filepath.Join(theirs, d)))
	}
	gitWrite(t, theirs, map[string]string{"d2f": "now a file\n"})
	gitWrite(t, ours, map[string]string{"keep/mine": "ours only\n"})
	plan := gitPlanT(t, theirs, head, ours)
	got := gitEntries(plan)
	for _, d := range []string{"dir", "dir/sub"} {
		if e := got[d]; e.Action != Take || e.Change != layer.Deleted || e.Type != "dir" {
			t.Errorf("%s: %+v, want a deleted directory", d, e)
		}
	}
	if _, ok := got["keep"]; ok {
		t.Errorf("keep: %+v, want no entry (ours has a file of its own there)", got["keep"])
	}
	if err := Apply(context.Background(), plan, ours, journalPath(t), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{"dir": false, "keep": true, "keep/mine": true, "keep/a": false, "d2f": true} {
		if _, err := os.Lstat(filepath.Join(ours, p)); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", p, err == nil, want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ours, "d2f")); string(b) != "now a file\n" {
		t.Errorf("d2f: %q", b)
	}
}

// TestPlanGit_TextMerge: edits close enough that the patch's context does
// not apply conflict in the git scope, and merge line-wise with TextMerge.
func TestPlanGit_TextMerge(t *testing.T) {
	theirs, ours, head := gitPair(t, map[string]string{"A": gitLines(20, nil)})
	gitWrite(t, theirs, map[string]string{"A": gitLines(20, map[int]string{5: "run"})})
	gitWrite(t, ours, map[string]string{"A": gitLines(20, map[int]string{7: "target"})})
	if e := gitEntries(gitPlanT(t, theirs, head, ours))["A"]; e.Action != Conflict {
		t.Fatalf("without text merge: %+v, want a conflict", e)
	}
	o := gitOptsT(t, theirs, head, ours, t.TempDir())
	o.TextMerge = true
	plan, err := PlanGit(context.Background(), o)
	gitMust(t, err)
	if e := gitEntries(plan)["A"]; e.Action != TextMerged {
		t.Fatalf("with text merge: %+v, want text_merged", e)
	}
	if err := Apply(context.Background(), plan, ours, journalPath(t), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	want := gitLines(20, map[int]string{5: "run", 7: "target"})
	if b, _ := os.ReadFile(filepath.Join(ours, "A")); string(b) != want {
		t.Errorf("A after apply:\n%s\nwant\n%s", b, want)
	}
}
