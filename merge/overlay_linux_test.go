package merge

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// overlaySides is makeSides with ours an overlay view whose lower layer
// holds ours' tree, as a run's view is: renaming a directory that comes
// from the lower layer fails there (EXDEV), and every write copies up.
func overlaySides(t testing.TB, base, theirs, ours tree) testSides {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting an overlay view needs root")
	}
	s := makeSides(t, base, theirs, tree{})
	root := filepath.Dir(s.ours)
	lower, upper, work := filepath.Join(root, "lower"), filepath.Join(root, "upper"), filepath.Join(root, "work")
	for _, d := range []string{lower, upper, work} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeTree(t, lower, ours)
	opts := "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work
	if err := unix.Mount("overlay", s.ours, "overlay", 0, opts); err != nil {
		t.Skipf("overlay mount not available here: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(s.ours, unix.MNT_DETACH) })
	return s
}

// TestApply_OverlayTarget applies the fixture (directories deleted and
// replaced by files, new directories, type changes) to an overlay view: the
// regression of "rename …/dir …/backup/0: invalid cross-device link".
func TestApply_OverlayTarget(t *testing.T) {
	base, theirs, ours, merged := applyFixture()
	s := overlaySides(t, base, theirs, ours)
	p := planSides(t, s, PlanOptions{})
	if err := Apply(context.Background(), p, s.ours, journalPath(t), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(merged.manifest(), treeManifest(t, s.ours)); d != "" {
		t.Errorf("overlay target after apply (-want +got):\n%s", d)
	}
}

func TestApply_OverlayFailureAtEveryStep(t *testing.T) {
	testFailureAtEveryStep(t, overlaySides)
}

func TestRecover_OverlaySIGKILL(t *testing.T) { testSIGKILL(t, overlaySides) }

// TestApply_OverlaySavesBackups: on an overlay view a file destination is
// saved while staging and replaced in place (no copy-up of it to move it),
// and a directory removed, never renamed.
func TestApply_OverlaySavesBackups(t *testing.T) {
	steps := hookStepsOn(t, overlaySides)
	kinds := map[string]int{}
	for _, s := range steps {
		kind, _, _ := strings.Cut(s, ":")
		kinds[kind]++
	}
	if kinds["backup"] != 0 || kinds["replaced"] == 0 || kinds["unlinked"] == 0 || kinds["rmdir"] == 0 {
		t.Errorf("steps on an overlay view: %v, want replaced, unlinked and rmdir, no backup moves", kinds)
	}
}

// overlayBaseSides is makeSides with ours an overlay view whose lower layer
// is base's directory itself, ours' differences from base written through
// the view, as the engine mounts a source over its fork point's layer: a
// destination the target has not touched is then the fork point's own
// file, and Apply restores it from there instead of saving a copy.
func overlayBaseSides(t testing.TB, base, theirs, ours tree) testSides {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting an overlay view needs root")
	}
	s := makeSides(t, base, theirs, tree{})
	view, err := overlayOver(t, s.base)
	if err != nil {
		t.Skipf("overlay mount not available here: %v", err)
	}
	s.ours = view
	for p := range base {
		if _, ok := ours[p]; !ok {
			if err := os.RemoveAll(filepath.Join(view, filepath.FromSlash(p))); err != nil {
				t.Fatal(err)
			}
		}
	}
	changed := tree{}
	for p, n := range ours {
		if b, ok := base[p]; !ok || b != n {
			changed[p] = n
		}
	}
	writeTree(t, view, changed)
	return s
}

func TestApply_OverlayBaseFailureAtEveryStep(t *testing.T) {
	testFailureAtEveryStep(t, overlayBaseSides)
}

func TestRecover_OverlayBaseSIGKILL(t *testing.T) { testSIGKILL(t, overlayBaseSides) }

// TestApply_OverlayRestoresFromBase: on an overlay view over the fork
// point's layer, the destinations the target has not touched are replaced
// or removed with no copy saved (the journal names the layer's file to
// restore them from), and the merge lands as it does elsewhere.
func TestApply_OverlayRestoresFromBase(t *testing.T) {
	for name, mk := range map[string]func(testing.TB, tree, tree, tree) testSides{
		"OverBase": overlayBaseSides, "OverCopy": overlaySides, "Touched": overlayTouchedSides,
	} {
		t.Run(name, func(t *testing.T) { testRestoresFromLower(t, mk, name != "Touched") })
	}
}

// lowerOfSides returns the lower layer of the overlay view s.ours.
func lowerOfSides(s testSides) string {
	tr := &txTree{root: s.ours}
	if l := tr.lowerDirs(); len(l) == 1 {
		return l[0]
	}
	return ""
}

// testRestoresFromLower applies the fixture on sides made by mk and checks
// how each replaced or removed destination can be restored: from the lower
// layer when restore is set, else from a saved copy.
func testRestoresFromLower(t *testing.T, mk func(testing.TB, tree, tree, tree) testSides, restore bool) {
	base, theirs, ours, merged := applyFixture()
	s := mk(t, base, theirs, ours)
	lower := lowerOfSides(s)
	if lower == "" {
		t.Fatalf("no single lower layer read for %s", s.ours)
	}
	p := planSides(t, s, PlanOptions{})
	j := journalPath(t)
	var steps []txStep
	applyHook = func(step string) error {
		if step == "journaled" {
			jr, err := readJournal(j)
			if err != nil {
				return err
			}
			steps = jr.Steps
		}
		return nil
	}
	defer func() { applyHook = nil }()
	if err := Apply(context.Background(), p, s.ours, j, ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	restored := map[string]string{}
	for _, st := range steps {
		if st.Op == opReplace || st.Op == opUnlink {
			restored[string(st.Path)] = string(st.Restore)
			if (st.Restore == "") == (st.Backup == "") {
				t.Errorf("%s %s: restore %q, backup %q: want exactly one", st.Op, st.Path, st.Restore, st.Backup)
			}
		}
	}
	for _, p := range []string{"mod", "del", "f2d"} {
		want := filepath.Join(lower, p)
		if !restore {
			want = ""
		}
		if restored[p] != want {
			t.Errorf("%s: restored from %q, want %q", p, restored[p], want)
		}
	}
	if d := cmp.Diff(merged.manifest(), treeManifest(t, s.ours)); d != "" {
		t.Errorf("overlay target after apply (-want +got):\n%s", d)
	}
}

// overlayTouchedSides is overlaySides with every file of the view touched
// (its times set again, which copies it up): no destination is a lower
// layer's file any more, so Apply saves a copy of each it replaces.
func overlayTouchedSides(t testing.TB, base, theirs, ours tree) testSides {
	t.Helper()
	s := overlaySides(t, base, theirs, ours)
	for p, n := range ours {
		if n.kind == 'f' {
			now := time.Now()
			if err := os.Chtimes(filepath.Join(s.ours, filepath.FromSlash(p)), now, now); err != nil {
				t.Fatal(err)
			}
		}
	}
	return s
}

func TestApply_OverlayTouchedFailureAtEveryStep(t *testing.T) {
	testFailureAtEveryStep(t, overlayTouchedSides)
}

func TestRecover_OverlayTouchedSIGKILL(t *testing.T) { testSIGKILL(t, overlayTouchedSides) }
