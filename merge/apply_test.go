package merge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tinehq/tine"
)

// applyFixture returns a base, a run and a target (the target made a few
// changes of its own) whose merge is clean and exercises every kind of step:
// deletions of files and directories, type changes both ways, new
// directories, symlinks (one pointing out of the workspace), mode changes
// and names with spaces, newlines and bytes that are not UTF-8.
func applyFixture() (base, theirs, ours, merged tree) {
	base = tree{
		"keep": file("keep"), "mod": file("old"), "del": file("del"),
		"gone": dir(), "gone/a": file("a"), "gone/sub": dir(), "gone/sub/b": file("b"),
		"d2f": dir(), "d2f/x": file("x"), "f2d": file("f2d"), "f2l": file("f2l"),
		"ro": dirMode(0o755), "ro/f": file("f"), "ln": link("keep"),
		"odd": dir(), "odd/a b": file("space"),
	}
	theirs = base.clone()
	theirs["mod"] = file("new content")
	delete(theirs, "del")
	theirs.removeAll("gone")
	theirs.removeAll("d2f")
	theirs["d2f"] = file("was a dir")
	theirs["f2d"] = dirMode(0o750)
	theirs["f2d/in"] = fileMode("inside", 0o755)
	theirs["f2l"] = link("/etc")
	theirs["ro"] = dirMode(0o555)
	theirs["ln"] = link("mod")
	theirs["odd/new\nline"] = file("nl")
	theirs["odd/\xff\xfe bin"] = file("\x00\x01binary")
	theirs["fresh"] = dirMode(0o500)
	theirs["fresh/deep"] = dir()
	theirs["fresh/deep/f"] = file("deep")
	ours = base.clone()
	ours["ours-only"] = file("mine")
	ours["odd/target"] = file("t")
	merged = ours.clone()
	for p := range base {
		if _, ok := theirs[p]; !ok {
			delete(merged, p)
		}
	}
	for p, n := range theirs {
		merged[p] = n
	}
	return base, theirs, ours, merged
}

// journalPath returns a journal path outside any workspace.
func journalPath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "merge.journal")
}

func TestApply(t *testing.T) {
	base, theirs, ours, merged := applyFixture()
	s := makeSides(t, base, theirs, ours)
	p := planSides(t, s, PlanOptions{})
	if !p.Clean() {
		t.Fatalf("fixture conflicts: %v", p.Conflicts())
	}
	j := journalPath(t)
	if err := Apply(context.Background(), p, s.ours, j, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(merged.manifest(), treeManifest(t, s.ours)); d != "" {
		t.Errorf("target after apply (-want +got):\n%s", d)
	}
	if _, err := os.Lstat(j); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("journal left behind: %v", err)
	}
	if target, _ := os.Readlink(filepath.Join(s.ours, "f2l")); target != "/etc" {
		t.Errorf("f2l -> %q, want the symlink copied as is", target)
	}
}

func TestApply_RefusesConflict(t *testing.T) {
	s := makeSides(t, tree{"f": file("0")}, tree{"f": file("1")}, tree{"f": file("2")})
	p := planSides(t, s, PlanOptions{})
	before := treeManifest(t, s.ours)
	err := Apply(context.Background(), p, s.ours, journalPath(t), ApplyOptions{})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("Apply = %v, want ErrConflict", err)
	}
	if d := cmp.Diff(before, treeManifest(t, s.ours)); d != "" {
		t.Errorf("target changed (-before +after):\n%s", d)
	}
}

func TestApply_RefusesUnfinishedJournal(t *testing.T) {
	s := makeSides(t, tree{"f": file("0")}, tree{"f": file("1")}, tree{"f": file("0")})
	j := journalPath(t)
	if err := os.WriteFile(j, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := Apply(context.Background(), planSides(t, s, PlanOptions{}), s.ours, j, ApplyOptions{})
	if !errors.Is(err, tine.ErrState) {
		t.Fatalf("Apply = %v, want ErrState", err)
	}
}

func TestApply_RefusesBadPlanPaths(t *testing.T) {
	target := t.TempDir()
	for _, bad := range []string{"../x", "/etc/passwd", "a/../../x", ".tine-merge-1/x", ""} {
		p := &Plan{Scope: "filesystem", Entries: []Entry{{Path: bad, Action: Take}}}
		err := Apply(context.Background(), p, target, journalPath(t), ApplyOptions{})
		if !errors.Is(err, tine.ErrInvalid) {
			t.Errorf("Apply with path %q = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestApply_SymlinkParentInTarget(t *testing.T) {
	outside := t.TempDir()
	base := tree{"d": dir(), "d/f": file("f")}
	theirs := tree{"d": dir(), "d/f": file("f2"), "d/new": file("n")}
	ours := tree{"d": link(outside)}
	s := makeSides(t, base, theirs, ours)
	p := planSides(t, s, PlanOptions{})
	want := map[string]string{
		"d/f":   `conflict: modified in run; in target, parent "d" is a symlink in target`,
		"d/new": `conflict: parent "d" is a symlink in target`,
	}
	if d := cmp.Diff(want, actions(p)); d != "" {
		t.Errorf("actions (-want +got):\n%s", d)
	}
	// Even a plan that claims otherwise never writes through the symlink.
	forged := &Plan{Entries: []Entry{{Path: "d/new", Action: Take, Source: filepath.Join(s.theirs, "d/new")}}}
	if err := Apply(context.Background(), forged, s.ours, journalPath(t), ApplyOptions{}); err == nil {
		t.Error("Apply through a symlinked parent succeeded")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("written outside the target: %v", entries)
	}
	checkNoStaging(t, s.ours)
}

// checkNoStaging fails t if a staging directory is left in dir.
func checkNoStaging(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), stagingPrefix) {
			t.Errorf("staging directory %s left behind", e.Name())
		}
	}
}

// hookSteps applies the fixture's plan with a hook that records every step.
func hookSteps(t *testing.T) []string { return hookStepsOn(t, makeSides) }

// hookStepsOn is hookSteps on sides made by mk.
func hookStepsOn(t *testing.T, mk func(testing.TB, tree, tree, tree) testSides) []string {
	t.Helper()
	base, theirs, ours, _ := applyFixture()
	s := mk(t, base, theirs, ours)
	var steps []string
	applyHook = func(step string) error { steps = append(steps, step); return nil }
	defer func() { applyHook = nil }()
	if err := Apply(context.Background(), planSides(t, s, PlanOptions{}), s.ours, journalPath(t), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	return steps
}

func TestApply_FailureAtEveryStep(t *testing.T) { testFailureAtEveryStep(t, makeSides) }

// testFailureAtEveryStep fails the fixture's apply at each of its steps in
// turn, on sides made by mk: the target is as it was (or, failing at
// cleanup, Recover finishes the merge).
func testFailureAtEveryStep(t *testing.T, mk func(testing.TB, tree, tree, tree) testSides) {
	steps := hookStepsOn(t, mk)
	if len(steps) < 20 || steps[0] != "staged" || steps[len(steps)-1] != "cleanup" {
		t.Fatalf("unexpected steps %q", steps)
	}
	base, theirs, ours, merged := applyFixture()
	for i, step := range steps {
		t.Run(fmt.Sprintf("%02d_%s", i, strings.ReplaceAll(step, "/", "|")), func(t *testing.T) {
			s := mk(t, base, theirs, ours)
			p := planSides(t, s, PlanOptions{})
			before := treeManifest(t, s.ours)
			j := journalPath(t)
			injected := errors.New("injected")
			applyHook = func(got string) error {
				if got == step {
					return injected
				}
				return nil
			}
			defer func() { applyHook = nil }()
			err := Apply(context.Background(), p, s.ours, j, ApplyOptions{})
			if !errors.Is(err, injected) {
				t.Fatalf("Apply = %v, want the injected error", err)
			}
			applyHook = nil
			want := before
			if step == "cleanup" { // committed: Recover finishes it
				want = merged.manifest()
				if err := Recover(context.Background(), j, nil); err != nil {
					t.Fatal(err)
				}
			}
			if d := cmp.Diff(want, treeManifest(t, s.ours)); d != "" {
				t.Errorf("target (-want +got):\n%s", d)
			}
			checkNoStaging(t, s.ours)
			if _, err := os.Lstat(j); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("journal left behind: %v", err)
			}
		})
	}
}

func TestApply_DirGainedEntriesSincePlanning(t *testing.T) {
	base := tree{"d": dir(), "d/a": file("a")}
	s := makeSides(t, base, tree{}, base)
	p := planSides(t, s, PlanOptions{})
	writeNode(t, filepath.Join(s.ours, "d", "late"), file("written after planning"))
	before := treeManifest(t, s.ours)
	if err := Apply(context.Background(), p, s.ours, journalPath(t), ApplyOptions{}); !errors.Is(err, tine.ErrState) {
		t.Fatalf("Apply = %v, want ErrState", err)
	}
	if d := cmp.Diff(before, treeManifest(t, s.ours)); d != "" {
		t.Errorf("target changed (-before +after):\n%s", d)
	}
}

// randomNames are the names random trees are made of: few, so that both
// sides often touch the same paths.
var randomNames = []string{"a", "b", "c d", "e\n", "\xff"}

// randomTree returns a small random tree.
func randomTree(r *rand.Rand) tree {
	tr := tree{}
	for range 4 + r.IntN(10) {
		randomCreate(r, tr)
	}
	return tr
}

// randomDir returns a random directory of tr ("." for the root).
func randomDir(r *rand.Rand, tr tree) string {
	dirs := []string{"."}
	for _, p := range sortedPaths(tr) {
		if tr[p].kind == 'd' && depth(rawPath(p)) < 3 {
			dirs = append(dirs, p)
		}
	}
	return dirs[r.IntN(len(dirs))]
}

// sortedPaths returns the paths of tr, sorted.
func sortedPaths(tr tree) []string {
	out := make([]string, 0, len(tr))
	for p := range tr {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// randomNode returns a random file, directory or symlink.
func randomNode(r *rand.Rand) node {
	switch r.IntN(6) {
	case 0, 1:
		return dirMode([]fs.FileMode{0o755, 0o700}[r.IntN(2)])
	case 2:
		return link([]string{"a", "../x", "/etc"}[r.IntN(3)])
	}
	return fileMode(fmt.Sprintf("content %d\n", r.IntN(4)), []fs.FileMode{0o644, 0o600, 0o755}[r.IntN(3)])
}

// randomCreate adds a random node at a free name in a random directory.
func randomCreate(r *rand.Rand, tr tree) {
	p := path.Join(randomDir(r, tr), randomNames[r.IntN(len(randomNames))])
	if _, ok := tr[p]; !ok {
		tr[p] = randomNode(r)
	}
}

// randomEdit changes tr at random: creates, deletes, rewrites, changes
// modes and types.
func randomEdit(r *rand.Rand, tr tree) {
	paths := sortedPaths(tr)
	if len(paths) == 0 || r.IntN(4) == 0 {
		randomCreate(r, tr)
		return
	}
	p := paths[r.IntN(len(paths))]
	n := tr[p]
	switch r.IntN(4) {
	case 0:
		tr.removeAll(p)
	case 1: // new type or content or mode
		tr.removeAll(p)
		tr[p] = randomNode(r)
	case 2:
		if n.kind != 'l' {
			n.perm ^= 0o050
			tr[p] = n
		}
	default:
		if n.kind == 'f' {
			tr[p] = file(n.data + "more\n").withPerm(n.perm)
		}
	}
}

// modelMerge merges theirs into ours over base on the model: the expected
// result and whether the merge is clean.
func modelMerge(base, theirs, ours tree) (tree, bool) {
	out := ours.clone()
	clean := true
	for _, p := range changedPaths(base, theirs) {
		b, inB := base[p]
		th, inT := theirs[p]
		o, inO := ours[p]
		switch {
		case inO == inT && o == th:
		case inO == inB && o == b:
			delete(out, p)
			if inT {
				out[p] = th
			}
		default:
			clean = false
		}
	}
	return out, clean && wellFormed(out)
}

// changedPaths lists the paths that differ between a and b.
func changedPaths(a, b tree) []string {
	var out []string
	for p, n := range a {
		if m, ok := b[p]; !ok || m != n {
			out = append(out, p)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			out = append(out, p)
		}
	}
	return out
}

// wellFormed reports whether every path of tr has a directory as parent.
func wellFormed(tr tree) bool {
	for p := range tr {
		if d := path.Dir(p); d != "." && tr[d].kind != 'd' {
			return false
		}
	}
	return true
}

func TestApply_Property(t *testing.T) {
	clean := 0
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 42))
		base := randomTree(r)
		theirs, ours := base.clone(), base.clone()
		for range 1 + r.IntN(4) {
			randomEdit(r, theirs)
		}
		for range r.IntN(4) {
			randomEdit(r, ours)
		}
		if checkProperty(t, seed, base, theirs, ours) {
			clean++
		}
	}
	t.Logf("%d of 200 random merges were clean", clean)
	if clean < 40 || clean > 190 {
		t.Errorf("%d clean merges of 200: the generator does not exercise both outcomes", clean)
	}
}

// checkProperty plans and applies one random merge and checks it against
// the model. It reports whether the merge was clean.
func checkProperty(t *testing.T, seed uint64, base, theirs, ours tree) bool {
	t.Helper()
	s := makeSides(t, base, theirs, ours)
	p := planSides(t, s, PlanOptions{})
	want, wantClean := modelMerge(base, theirs, ours)
	if p.Clean() != wantClean {
		t.Errorf("seed %d: plan clean = %v, model says %v\nbase %v\ntheirs %v\nours %v\nplan %v",
			seed, p.Clean(), wantClean, base, theirs, ours, actions(p))
		return false
	}
	before := treeManifest(t, s.ours)
	err := Apply(context.Background(), p, s.ours, journalPath(t), ApplyOptions{})
	got := treeManifest(t, s.ours)
	switch {
	case wantClean && err != nil:
		t.Errorf("seed %d: Apply: %v", seed, err)
	case wantClean:
		if d := cmp.Diff(want.manifest(), got); d != "" {
			t.Errorf("seed %d: merged target (-model +got):\n%s", seed, d)
		}
	case !errors.Is(err, ErrConflict):
		t.Errorf("seed %d: Apply of a conflicting plan = %v, want ErrConflict", seed, err)
	default:
		if d := cmp.Diff(before, got); d != "" {
			t.Errorf("seed %d: conflicting merge changed the target (-before +after):\n%s", seed, d)
		}
	}
	return wantClean
}

// TestApply_NewDirectoryPlacedWhole: a directory the run added, which the
// target does not have, lands by one rename with everything below it
// (issue 24: 40,000 new files cost 40,000 renames and journal steps),
// each entry with its content, mode and, for directories, modification
// time; a rollback takes it all away again.
func TestApply_NewDirectoryPlacedWhole(t *testing.T) {
	base := tree{"a": file("a")}
	theirs := base.clone()
	theirs["new"] = dir()
	theirs["new/ro"] = dirMode(0o555)
	theirs["new/ro/f"] = file("in a read-only directory")
	for i := range 50 {
		theirs[fmt.Sprintf("new/sub/f%02d", i)] = fileMode(fmt.Sprint(i), 0o640)
	}
	theirs["new/sub"] = dirMode(0o750)
	theirs["new/sub/link"] = link("f00")
	s := makeSides(t, base, theirs, base)
	for _, d := range []string{"new/sub", "new/ro", "new"} { // times the copies must keep
		when := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
		if err := os.Chtimes(filepath.Join(s.theirs, d), when, when); err != nil {
			t.Fatal(err)
		}
	}
	p := planSides(t, s, PlanOptions{})
	var placed []string
	applyHook = func(step string) error {
		if strings.HasPrefix(step, "placed:") {
			placed = append(placed, step)
		}
		return nil
	}
	defer func() { applyHook = nil }()
	if err := Apply(context.Background(), p, s.ours, journalPath(t), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(placed, []string{"placed:new"}) {
		t.Errorf("placed %d entries (%v), want new/ alone", len(placed), placed[:min(len(placed), 5)])
	}
	if d := cmp.Diff(theirs.manifest(), treeManifest(t, s.ours)); d != "" {
		t.Errorf("target after apply (-want +got):\n%s", d)
	}
	for _, d := range []string{"new/sub", "new/ro", "new"} {
		want, _ := os.Lstat(filepath.Join(s.theirs, d))
		got, _ := os.Lstat(filepath.Join(s.ours, d))
		if !got.ModTime().Equal(want.ModTime()) {
			t.Errorf("%s: modified %v, want the run's %v", d, got.ModTime(), want.ModTime())
		}
	}

	t.Run("RolledBack", func(t *testing.T) {
		s := makeSides(t, base, theirs, base)
		applyHook = func(step string) error {
			if step == "committed" {
				return errors.New("failing at the commit")
			}
			return nil
		}
		if err := Apply(context.Background(), planSides(t, s, PlanOptions{}), s.ours, journalPath(t), ApplyOptions{}); err == nil {
			t.Fatal("apply failing at its commit succeeded")
		}
		if d := cmp.Diff(base.manifest(), treeManifest(t, s.ours)); d != "" {
			t.Errorf("target after the rollback (-want +got):\n%s", d)
		}
	})
}
