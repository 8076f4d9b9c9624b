package merge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/merge/internal/gittest"
)

// The git scope's own tests are in merge/internal/gitscope; these are
// PlanGit's, through the real Apply and with the text merge it adds.

// planGitT runs PlanGit with a fresh scratch directory, the fork point's
// files being the repository gittest.Pair made theirs and ours from.
func planGitT(t testing.TB, theirs, head, ours string) *Plan {
	t.Helper()
	plan, err := PlanGit(context.Background(), gitOptsT(t, theirs, head, ours, t.TempDir()))
	if err != nil {
		t.Fatalf("PlanGit: %v", err)
	}
	return plan
}

// gitOptsT returns the options of a plan of theirs into ours, with base the
// repository gittest.Pair copied them from and the changes from fstree.Diff.
func gitOptsT(t testing.TB, theirs, head, ours, scratch string) GitOptions {
	t.Helper()
	base := gittest.Base(theirs)
	return GitOptions{Theirs: theirs, Base: base, Head: head, Ours: ours, Changed: gittest.Changed(t, base, theirs), Scratch: scratch}
}

// TestPlanGit_UncommittedAtFork is the regression of a false conflict: the
// source had an uncommitted edit to A when it was forked and the run edited
// A further; the base is the fork point's files, so the patch applies.
func TestPlanGit_UncommittedAtFork(t *testing.T) {
	theirs, ours, head := gittest.Fork(t, map[string]string{"A": "a\n"}, map[string]string{"A": "a\na2\n"})
	gittest.Write(t, theirs, map[string]string{"A": "a\na2\na3\n"})
	plan := planGitT(t, theirs, head, ours)
	if e := gittest.Entries(plan)["A"]; e.Action != Take || e.Change != layer.Modified || len(plan.Entries) != 1 {
		t.Fatalf("plan: %+v, want A taken alone", plan.Entries)
	}
	if err := Apply(context.Background(), plan, ours, journalPath(t), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ours, "A")); string(b) != "a\na2\na3\n" {
		t.Errorf("A after apply: %q", b)
	}
}

// TestPlanGit_NewDirectories is the regression of "openat2 …/newdir: no
// such file or directory": files in directories several levels deep that
// the target lacks are planned with their directories (modes from the run)
// and apply through the real Apply.
func TestPlanGit_NewDirectories(t *testing.T) {
	theirs, ours, head := gittest.Pair(t, map[string]string{"A": "a\n"})
	gittest.Write(t, theirs, map[string]string{"newdir/f": "x\n", "n1/n2/n3/deep": "d\n"})
	gittest.Must(t, os.Chmod(filepath.Join(theirs, "n1", "n2"), 0o750))
	plan := planGitT(t, theirs, head, ours)
	got := gittest.Entries(plan)
	for _, d := range []string{"newdir", "n1", "n1/n2", "n1/n2/n3"} {
		if e := got[d]; e.Action != Take || e.Change != layer.Added || e.Type != "dir" {
			t.Errorf("%s: %+v, want an added directory", d, e)
		}
	}
	if err := Apply(context.Background(), plan, ours, journalPath(t), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if a, b := gittest.Tree(t, ours), gittest.Tree(t, theirs); fmt.Sprint(a) != fmt.Sprint(b) {
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
	theirs, ours, head := gittest.Pair(t, map[string]string{"dir/sub/f": "f\n", "dir/g": "g\n", "keep/a": "a\n", "keep/b": "b\n", "d2f/x": "x\n"})
	for _, d := range []string{"dir", "keep", "d2f"} {
		gittest.Must(t, os.RemoveAll(filepath.Join(theirs, d)))
	}
	gittest.Write(t, theirs, map[string]string{"d2f": "now a file\n"})
	gittest.Write(t, ours, map[string]string{"keep/mine": "ours only\n"})
	plan := planGitT(t, theirs, head, ours)
	got := gittest.Entries(plan)
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
	theirs, ours, head := gittest.Pair(t, map[string]string{"A": gittest.Lines(20, nil)})
	gittest.Write(t, theirs, map[string]string{"A": gittest.Lines(20, map[int]string{5: "run"})})
	gittest.Write(t, ours, map[string]string{"A": gittest.Lines(20, map[int]string{7: "target"})})
	if e := gittest.Entries(planGitT(t, theirs, head, ours))["A"]; e.Action != Conflict {
		t.Fatalf("without text merge: %+v, want a conflict", e)
	}
	o := gitOptsT(t, theirs, head, ours, t.TempDir())
	o.TextMerge = true
	plan, err := PlanGit(context.Background(), o)
	gittest.Must(t, err)
	if e := gittest.Entries(plan)["A"]; e.Action != TextMerged {
		t.Fatalf("with text merge: %+v, want text_merged", e)
	}
	if err := Apply(context.Background(), plan, ours, journalPath(t), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	want := gittest.Lines(20, map[int]string{5: "run", 7: "target"})
	if b, _ := os.ReadFile(filepath.Join(ours, "A")); string(b) != want {
		t.Errorf("A after apply:\n%s\nwant\n%s", b, want)
	}
}
