package gitscope

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/merge/internal/gittest"
	"github.com/tinehq/tine/merge/internal/plan"
)

// planT runs Plan with a fresh scratch directory, the fork point's
// files being the repository gittest.Pair made theirs and ours from.
func planT(t testing.TB, theirs, head, ours string) *plan.Plan {
	t.Helper()
	pl, err := Plan(context.Background(), optsT(t, theirs, head, ours, t.TempDir()))
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	return pl
}

// optsT returns the options of a plan of theirs into ours, with base the
// repository gittest.Pair copied them from and the changes from fstree.Diff.
func optsT(t testing.TB, theirs, head, ours, scratch string) Options {
	t.Helper()
	base := gittest.Base(theirs)
	return Options{Theirs: theirs, Base: base, Head: head, Ours: ours, Changed: gittest.Changed(t, base, theirs), Scratch: scratch}
}

// applyT is a test-only applier: deletions first, then each upsert copied
// from its Source (files with their permissions, symbolic links as links,
// directories made empty).
func applyT(t *testing.T, pl *plan.Plan, ours string) {
	t.Helper()
	if !pl.Clean() {
		t.Fatalf("applying a plan with conflicts: %+v", pl.Conflicts())
	}
	for _, e := range pl.Entries {
		if e.Action == plan.Take && e.Change == layer.Deleted {
			if err := os.RemoveAll(filepath.Join(ours, e.Path)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, e := range pl.Entries {
		if e.Action != plan.Take || e.Change == layer.Deleted {
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
		if err := copyFile(e.Source, dst, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

// dirSum hashes everything in a repository's .git directory: names,
// modes, contents and modification times.
func dirSum(t *testing.T, repo string) string {
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

// countObjects counts the loose objects and packs of a repository.
func countObjects(t *testing.T, repo string) string {
	return gittest.Git(t, repo, "count-objects")
}

func baseFiles() map[string]string {
	return map[string]string{
		"keep.txt":        "keep\n",
		"edit.txt":        gittest.Lines(20, nil),
		"shared.txt":      gittest.Lines(20, nil),
		"staged.txt":      "staged\n",
		"del.txt":         "delete me\n",
		"mv-src.txt":      "moved by git mv\n" + gittest.Lines(5, nil),
		"plain-src.txt":   "moved by mv\n" + gittest.Lines(5, nil),
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

// changeTheirs makes every kind of change in theirs.
func changeTheirs(t *testing.T, theirs string) {
	t.Helper()
	gittest.Write(t, theirs, map[string]string{
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
		"staged-new.txt":       "added then moved\n" + gittest.Lines(4, nil),
	})
	gittest.Git(t, theirs, "add", "staged-new.txt")
	gittest.Must(t, os.Rename(filepath.Join(theirs, "staged-new.txt"), filepath.Join(theirs, "moved-new.txt")))
	gittest.Must(t, os.Remove(filepath.Join(theirs, "del.txt")))
	gittest.Git(t, theirs, "mv", "mv-src.txt", "mv-dst.txt")
	gittest.Must(t, os.Rename(filepath.Join(theirs, "plain-src.txt"), filepath.Join(theirs, "plain-dst.txt")))
	gittest.Must(t, os.Chmod(filepath.Join(theirs, "run.sh"), 0o755))
	gittest.Must(t, os.Symlink("keep.txt", filepath.Join(theirs, "link")))
	gittest.Must(t, os.Remove(filepath.Join(theirs, "tc")))
	gittest.Must(t, os.Symlink("keep.txt", filepath.Join(theirs, "tc")))
	gittest.Must(t, os.RemoveAll(filepath.Join(theirs, "dir/gone")))
	gittest.Write(t, theirs, map[string]string{"dir/gone": "a file now\n"})
	gittest.Write(t, theirs, map[string]string{"edit.txt": gittest.Lines(20, map[int]string{3: "committed since"})})
	gittest.Git(t, theirs, "commit", "-qam", "since the fork")
	gittest.Write(t, theirs, map[string]string{"staged.txt": "staged change\n"})
	gittest.Git(t, theirs, "add", "staged.txt")
	gittest.Write(t, theirs, map[string]string{"shared.txt": gittest.Lines(20, map[int]string{15: "unstaged"})})
}

func TestPlanGit_AllKinds(t *testing.T) {
	theirs, ours, head := gittest.Pair(t, baseFiles())
	changeTheirs(t, theirs)
	sumTheirs, sumOurs := dirSum(t, theirs), dirSum(t, ours)
	objTheirs, objOurs := countObjects(t, theirs), countObjects(t, ours)
	wantTree := gittest.Tree(t, theirs, "app.log", "build", ".tine-state", ".tine-dir")
	oursBefore := gittest.Tree(t, ours)

	pl := planT(t, theirs, head, ours)

	if sum := dirSum(t, theirs); sum != sumTheirs || countObjects(t, theirs) != objTheirs {
		t.Error("Plan changed theirs' .git")
	}
	if sum := dirSum(t, ours); sum != sumOurs || countObjects(t, ours) != objOurs {
		t.Error("Plan changed ours' .git")
	}
	if got := gittest.Tree(t, ours); fmt.Sprint(got) != fmt.Sprint(oursBefore) {
		t.Error("Plan changed ours' files")
	}
	if pl.Scope != "git" || !pl.Clean() {
		t.Fatalf("plan: scope %q, conflicts %+v", pl.Scope, pl.Conflicts())
	}
	if !sort.SliceIsSorted(pl.Entries, func(i, j int) bool { return pl.Entries[i].Path < pl.Entries[j].Path }) {
		t.Error("entries not sorted by path")
	}
	checkAllKinds(t, gittest.Entries(pl))
	applyT(t, pl, ours)
	got := gittest.Tree(t, ours)
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

// checkAllKinds checks the entries of the plan made by changeTheirs.
func checkAllKinds(t *testing.T, got map[string]plan.Entry) {
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
		case e.Action != plan.Take || e.Change != w.change || e.Type != w.typ:
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
	theirs, ours, head := gittest.Pair(t, baseFiles())
	changeTheirs(t, theirs)
	gittest.Write(t, ours, map[string]string{
		"edit.txt":   gittest.Lines(20, map[int]string{3: "ours too"}),
		"shared.txt": gittest.Lines(20, map[int]string{15: "ours as well"}),
	})
	pl := planT(t, theirs, head, ours)
	conflicts := pl.Conflicts()
	if len(conflicts) != 2 || conflicts[0].Path != "edit.txt" || conflicts[1].Path != "shared.txt" {
		t.Fatalf("conflicts: %+v", conflicts)
	}
	for _, c := range conflicts {
		if !strings.Contains(c.Reason, "patch does not apply") || c.Source != "" {
			t.Errorf("%s: reason %q, source %q", c.Path, c.Reason, c.Source)
		}
	}
	got := gittest.Entries(pl)
	for _, p := range []string{"untracked.txt", "mv-dst.txt", "tc", "link", "dir/gone"} {
		if e := got[p]; e.Action != plan.Take || e.Source == "" {
			t.Errorf("%q: %+v, want take with a source", p, e)
		} else if _, err := os.Lstat(e.Source); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
}

func TestPlanGit_OursChangedElsewhere(t *testing.T) {
	theirs, ours, head := gittest.Pair(t, baseFiles())
	gittest.Write(t, theirs, map[string]string{"edit.txt": gittest.Lines(20, map[int]string{3: "theirs"})})
	gittest.Write(t, ours, map[string]string{"edit.txt": gittest.Lines(20, map[int]string{18: "ours"})})
	gittest.Must(t, os.Chmod(filepath.Join(ours, "edit.txt"), 0o664))
	pl := planT(t, theirs, head, ours)
	if len(pl.Entries) != 1 || !pl.Clean() {
		t.Fatalf("plan: %+v", pl.Entries)
	}
	applyT(t, pl, ours)
	data, err := os.ReadFile(filepath.Join(ours, "edit.txt"))
	gittest.Must(t, err)
	if want := gittest.Lines(20, map[int]string{3: "theirs", 18: "ours"}); string(data) != want {
		t.Errorf("edit.txt: got\n%s", data)
	}
	if fi, _ := os.Stat(filepath.Join(ours, "edit.txt")); fi.Mode().Perm() != 0o664 {
		t.Errorf("edit.txt: mode %v, want ours' 0664", fi.Mode())
	}
}

func TestPlanGit_Converged(t *testing.T) {
	theirs, ours, head := gittest.Pair(t, baseFiles())
	for _, dir := range []string{theirs, ours} {
		gittest.Write(t, dir, map[string]string{"both.txt": "same\n", "edit.txt": gittest.Lines(20, map[int]string{4: "same change"})})
		gittest.Must(t, os.Remove(filepath.Join(dir, "del.txt")))
		gittest.Must(t, os.Symlink("keep.txt", filepath.Join(dir, "link")))
	}
	gittest.Write(t, theirs, map[string]string{"only.txt": "theirs\n"})
	pl := planT(t, theirs, head, ours)
	if !pl.Clean() {
		t.Fatalf("conflicts: %+v", pl.Conflicts())
	}
	got := gittest.Entries(pl)
	for _, p := range []string{"both.txt", "edit.txt", "del.txt", "link"} {
		if got[p].Action != plan.Converged {
			t.Errorf("%q: %+v, want converged", p, got[p])
		}
	}
	if e := got["only.txt"]; e.Action != plan.Take || e.Change != layer.Added {
		t.Errorf("only.txt: %+v", e)
	}
}

func TestPlanGit_NoChanges(t *testing.T) {
	theirs, ours, head := gittest.Pair(t, baseFiles())
	gittest.Write(t, theirs, map[string]string{"app.log": "ignored\n", ".tine-x": "tine\n", ".tine-d/y": "tine\n"})
	pl := planT(t, theirs, head, ours)
	if pl.Scope != "git" || len(pl.Entries) != 0 || !pl.Clean() {
		t.Fatalf("plan: %+v", pl)
	}
}

func TestPlanGit_Invalid(t *testing.T) {
	theirs, ours, head := gittest.Pair(t, baseFiles())
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
			_, err := Plan(context.Background(), Options{Theirs: tc.theirs, Head: tc.head, Ours: ours, Scratch: t.TempDir()})
			if !errors.Is(err, tine.ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
		})
	}
}

func TestPlanGit_NestedRepository(t *testing.T) {
	theirs, ours, head := gittest.Pair(t, baseFiles())
	inner := filepath.Join(theirs, "inner")
	gittest.Must(t, os.Mkdir(inner, 0o755))
	gittest.Git(t, inner, "init", "-q")
	gittest.Write(t, inner, map[string]string{"f": "f\n"})
	gittest.Git(t, inner, "add", "-A")
	gittest.Git(t, inner, "commit", "-qm", "inner")
	gittest.Write(t, theirs, map[string]string{"fine.txt": "fine\n"})
	pl := planT(t, theirs, head, ours)
	got := gittest.Entries(pl)
	if e := got["inner"]; e.Action != plan.Conflict || e.Type != "other" || !strings.Contains(e.Reason, "nested") {
		t.Errorf("inner: %+v", e)
	}
	if e := got["fine.txt"]; e.Action != plan.Take {
		t.Errorf("fine.txt: %+v", e)
	}
}

func TestPlanGit_InTheWay(t *testing.T) {
	theirs, ours, head := gittest.Pair(t, baseFiles())
	gittest.Write(t, theirs, map[string]string{"x": "file in theirs\n", "y/z": "under a dir\n", "l/m": "under a dir\n"})
	gittest.Write(t, ours, map[string]string{"x/inside": "ours has a dir\n", "y": "ours has a file\n"})
	gittest.Must(t, os.Symlink(t.TempDir(), filepath.Join(ours, "l")))
	// dir/gone becomes a file in theirs while ours added a file inside it.
	gittest.Must(t, os.RemoveAll(filepath.Join(theirs, "dir/gone")))
	gittest.Write(t, theirs, map[string]string{"dir/gone": "a file now\n"})
	gittest.Write(t, ours, map[string]string{"dir/gone/ours.txt": "ours\n"})
	pl := planT(t, theirs, head, ours)
	got := gittest.Entries(pl)
	for _, p := range []string{"x", "y/z", "l/m", "dir/gone"} {
		if e := got[p]; e.Action != plan.Conflict || e.Reason == "" {
			t.Errorf("%q: %+v, want a conflict", p, e)
		}
	}
	if _, err := os.Lstat(filepath.Join(ours, "l", "m")); err == nil {
		t.Error("wrote through ours' symlink")
	}
}

func TestPlanGit_ScratchInsideRepository(t *testing.T) {
	theirs, ours, head := gittest.Pair(t, baseFiles())
	gittest.Write(t, theirs, map[string]string{"edit.txt": gittest.Lines(20, map[int]string{1: "x"}), "new/f": "f\n"})
	outer := t.TempDir()
	gittest.Git(t, outer, "init", "-q")
	scratch := filepath.Join(outer, "sub", "scratch")
	gittest.Must(t, os.MkdirAll(scratch, 0o755))
	pl, err := Plan(context.Background(), optsT(t, theirs, head, ours, scratch))
	gittest.Must(t, err)
	if len(pl.Entries) != 3 || !pl.Clean() { // edit.txt, new (a directory), new/f
		t.Fatalf("plan: %+v", pl.Entries)
	}
	applyT(t, pl, ours)
	if a, b := gittest.Tree(t, ours), gittest.Tree(t, theirs); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("ours after apply:\n%v\nwant\n%v", a, b)
	}
}

func TestCheckReasons(t *testing.T) {
	stderr := "Checking patch a...\nerror: while searching for:\nx\n\nerror: patch failed: a:1\n" +
		"error: a: patch does not apply\nChecking patch b...\nChecking patch c => d...\nerror: c: No such file or directory\n"
	got, ok := checkReasons(stderr, 3)
	want := []string{"patch failed: a:1; a: patch does not apply", "", "c: No such file or directory"}
	if !ok || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %q %v, want %q", got, ok, want)
	}
	if _, ok := checkReasons(stderr, 2); ok {
		t.Error("3 blocks for 2 sections: ok")
	}
	if _, ok := checkReasons("error: corrupt patch at line 3\n", 1); ok {
		t.Error("an error before any block: ok")
	}
}

func TestSplitPatch(t *testing.T) {
	patch := "diff --git a/x b/x\n+diff --git a/y b/y\n diff --git\ndiff --git a/z b/z\nGIT binary patch\nliteral 0\nHcmV?d00001\n"
	got := splitPatch([]byte(patch))
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
		files[benchName(i)] = gittest.Lines(10, map[int]string{1: fmt.Sprint(i)})
	}
	theirs, ours, head := gittest.Pair(b, files)
	for i := 0; i < 100; i++ {
		name := benchName(i)
		if i%10 == 0 {
			name = fmt.Sprintf("new/n%03d.txt", i)
		}
		gittest.Write(b, theirs, map[string]string{name: gittest.Lines(10, map[int]string{5: "changed"})})
	}
	b.Logf("building the 10,000-file repository and its two copies: %v", time.Since(start))
	// Cold: theirs' index still has the stat data of the repository it was
	// copied from, as in a fresh run, so git rehashes every file.
	b.Run("Cold", func(b *testing.B) { benchPlan(b, theirs, head, ours) })
	// Warm: theirs' index was refreshed (as git status in the run does).
	gittest.Git(b, theirs, "update-index", "-q", "--refresh")
	b.Run("Warm", func(b *testing.B) { benchPlan(b, theirs, head, ours) })
}

// benchPlan plans the benchmark's merge b.N times.
func benchPlan(b *testing.B, theirs, head, ours string) {
	b.Helper()
	for i := 0; i < b.N; i++ {
		scratch := filepath.Join(b.TempDir(), "scratch")
		gittest.Must(b, os.Mkdir(scratch, 0o755))
		pl, err := Plan(context.Background(), optsT(b, theirs, head, ours, scratch))
		if err != nil {
			b.Fatal(err)
		}
		if len(pl.Entries) != 100 || !pl.Clean() {
			b.Fatalf("%d entries, clean %v", len(pl.Entries), pl.Clean())
		}
	}
}

// benchName names file i of the benchmark's repository.
func benchName(i int) string { return fmt.Sprintf("d%02d/e%02d/f%04d.txt", i%100, i%37, i) }

// TestPlanGit_UncommittedUntouched: work the source had not committed when
// it was forked, and the run did not touch, is not the run's change.
func TestPlanGit_UncommittedUntouched(t *testing.T) {
	theirs, ours, head := gittest.Fork(t, map[string]string{"A": "a\n", "B": "b\n"}, map[string]string{"A": "a\na2\n"})
	gittest.Write(t, ours, map[string]string{"A": "ours since\n"})
	gittest.Write(t, theirs, map[string]string{"B": "b2\n"})
	pl := planT(t, theirs, head, ours)
	if _, ok := gittest.Entries(pl)["A"]; ok || len(pl.Entries) != 1 || !pl.Clean() {
		t.Fatalf("plan: %+v, want B alone", pl.Entries)
	}
}

// TestCopyIndex_KeepsTheModificationTime: the fork point's index is
// staged from a copy of the run's; made without its modification time,
// the copy hid git's racily clean entries (a file edited after the commit
// in the same clock tick, to the same size, was taken for the commit's),
// and the patch then carried an edit the target already had. The
// differential harness found it (one run in eight or ten of seed
// 1796416162807602180, busy, git scope; none in 40 after).
func TestCopyIndex_KeepsTheModificationTime(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "index"), filepath.Join(dir, "index-base")
	if err := os.WriteFile(src, []byte("DIRC"), 0o644); err != nil {
		t.Fatal(err)
	}
	when := time.Date(2026, 12, 4, 20, 39, 0, 123456789, time.UTC)
	if err := os.Chtimes(src, when, when); err != nil {
		t.Fatal(err)
	}
	if err := copyIndex(src, dst); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.ModTime().Equal(when) {
		t.Errorf("the index's copy was modified at %v, want the index's %v", fi.ModTime(), when)
	}
	if b, _ := os.ReadFile(dst); string(b) != "DIRC" {
		t.Errorf("the index's copy holds %q", b)
	}
}
