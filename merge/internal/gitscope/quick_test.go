package gitscope

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tinehq/tine/merge/internal/gittest"
	"github.com/tinehq/tine/merge/internal/plan"
)

// quickCases are runs and targets of every kind the git scope plans:
// each returns the run, the target and the fork point's commit.
var quickCases = map[string]func(t *testing.T) (theirs, ours, head string){
	"AllKinds": func(t *testing.T) (string, string, string) {
		theirs, ours, head := gittest.Pair(t, baseFiles())
		changeTheirs(t, theirs)
		return theirs, ours, head
	},
	"TargetChangedSome": func(t *testing.T) (string, string, string) {
		theirs, ours, head := gittest.Pair(t, baseFiles())
		changeTheirs(t, theirs)
		gittest.Write(t, ours, map[string]string{
			"edit.txt":      gittest.Lines(20, map[int]string{3: "ours too"}),
			"sub/old.txt":   "ours\n",
			"ünïcödé/x.txt": "ours only\n",
		})
		gittest.Must(t, os.Chmod(filepath.Join(ours, "keep.txt"), 0o600))
		return theirs, ours, head
	},
	"InTheWay": func(t *testing.T) (string, string, string) {
		theirs, ours, head := gittest.Pair(t, baseFiles())
		gittest.Write(t, theirs, map[string]string{"x": "file in theirs\n", "y/z": "under a dir\n", "fine/a": "a\n"})
		gittest.Write(t, ours, map[string]string{"x/inside": "ours has a dir\n", "y": "ours has a file\n"})
		gittest.Must(t, os.RemoveAll(filepath.Join(theirs, "dir/gone")))
		gittest.Write(t, theirs, map[string]string{"dir/gone": "a file now\n"})
		return theirs, ours, head
	},
	"Nested": func(t *testing.T) (string, string, string) {
		theirs, ours, head := gittest.Pair(t, baseFiles())
		inner := filepath.Join(theirs, "inner")
		gittest.Must(t, os.Mkdir(inner, 0o755))
		gittest.Git(t, inner, "init", "-q")
		gittest.Write(t, inner, map[string]string{"f": "f\n"})
		gittest.Git(t, inner, "add", "-A")
		gittest.Git(t, inner, "commit", "-qm", "inner")
		gittest.Write(t, theirs, map[string]string{"fine.txt": "fine\n", ".Git-like/x": "odd\n"})
		return theirs, ours, head
	},
	"PermsAndIgnoreRules": func(t *testing.T) (string, string, string) {
		theirs, ours, head := gittest.Pair(t, map[string]string{"a": "a\n", "b": "b\n", "c": "c\n", "x.bin": "x\n",
			".gitattributes": "*.bin binary\n", "d/e": "e\n"})
		gittest.Must(t, os.Chmod(filepath.Join(theirs, "a"), 0o600)) // bits git does not see
		gittest.Must(t, os.Chmod(filepath.Join(theirs, "b"), 0o755)) // the executable bit
		gittest.Write(t, theirs, map[string]string{"c": "c2\n", "x.bin": "y\n", "d/e": "e\n", "new.log": "n\n"})
		gittest.Must(t, os.Chmod(filepath.Join(theirs, "c"), 0o640))
		return theirs, ours, head
	},
	"DirectoriesComeAndGo": func(t *testing.T) (string, string, string) {
		theirs, ours, head := gittest.Pair(t, map[string]string{"dir/sub/f": "f\n", "dir/g": "g\n", "keep/a": "a\n", "d2f/x": "x\n"})
		for _, d := range []string{"dir", "keep", "d2f"} {
			gittest.Must(t, os.RemoveAll(filepath.Join(theirs, d)))
		}
		gittest.Write(t, theirs, map[string]string{"d2f": "now a file\n", "n1/n2/deep": "d\n"})
		gittest.Write(t, ours, map[string]string{"keep/mine": "ours only\n"})
		return theirs, ours, head
	},
}

// TestPlanGit_QuickMatchesGit: the plan with paths decided from the files
// (gitQuick) is the plan git alone gives, entry for entry, in every case.
func TestPlanGit_QuickMatchesGit(t *testing.T) {
	for name, setup := range quickCases {
		t.Run(name, func(t *testing.T) {
			theirs, ours, head := setup(t)
			plans := map[bool]*plan.Plan{}
			scratches := map[bool]string{}
			for _, off := range []bool{false, true} {
				quickOff = off
				scratches[off] = t.TempDir()
				p, err := Plan(context.Background(), optsT(t, theirs, head, ours, scratches[off]))
				quickOff = false
				if err != nil {
					t.Fatal(err)
				}
				for i := range p.Entries { // staged content lives in each plan's scratch
					p.Entries[i].Source = strings.Replace(p.Entries[i].Source, scratches[off], "SCRATCH", 1)
				}
				plans[off] = p
			}
			if d := cmp.Diff(plans[true], plans[false]); d != "" {
				t.Errorf("plan with quick paths differs from git's (-git +quick):\n%s", d)
			}
		})
	}
}

// TestPlanGit_QuickHashesNothing: a run whose changes the target has not
// touched is planned without git storing any object: nothing is hashed.
func TestPlanGit_QuickHashesNothing(t *testing.T) {
	theirs, ours, head := gittest.Pair(t, map[string]string{"a/f": "f\n", "g": "g\n", "h": "h\n", "l": "l\n"})
	gittest.Write(t, theirs, map[string]string{"a/f": "f2\n", "new/dir/n": "n\n"})
	gittest.Must(t, os.Remove(filepath.Join(theirs, "g")))
	gittest.Must(t, os.Chmod(filepath.Join(theirs, "h"), 0o755))
	gittest.Must(t, os.Remove(filepath.Join(theirs, "l")))
	gittest.Must(t, os.Symlink("h", filepath.Join(theirs, "l")))
	scratch := t.TempDir()
	p, err := Plan(context.Background(), optsT(t, theirs, head, ours, scratch))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Entries) != 7 || !p.Clean() { // a/f, g, h, l, new, new/dir, new/dir/n
		t.Fatalf("plan: %+v", p.Entries)
	}
	var objects []string
	err = filepath.WalkDir(filepath.Join(scratch, "objects"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			objects = append(objects, p)
		}
		return err
	})
	if err != nil || len(objects) != 0 {
		t.Errorf("git stored %d objects (%v), want none", len(objects), err)
	}
}
