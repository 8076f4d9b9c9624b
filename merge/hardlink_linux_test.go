package merge

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestApply_KeepsHardLinks is the regression of "hard links are split by a
// merge": files the run made as hard links of one another (new ones, and
// ones it changed) are hard links in the target too, on a plain directory
// and on an overlay view.
func TestApply_KeepsHardLinks(t *testing.T) {
	for name, mk := range map[string]func(testing.TB, tree, tree, tree) testSides{"plain": makeSides, "overlay": overlaySides} {
		t.Run(name, func(t *testing.T) {
			base := tree{"old": file("old"), "d": dir()}
			s := mk(t, base, base, base)
			link := func(a, b string) {
				if err := os.Link(filepath.Join(s.theirs, a), filepath.Join(s.theirs, b)); err != nil {
					t.Fatal(err)
				}
			}
			writeNode(t, filepath.Join(s.theirs, "new1"), file("shared"))
			link("new1", "d/new2")
			if err := os.Remove(filepath.Join(s.theirs, "old")); err != nil {
				t.Fatal(err)
			}
			link("new1", "old")
			p := planSides(t, s, PlanOptions{})
			if err := Apply(context.Background(), p, s.ours, journalPath(t), ApplyOptions{}); err != nil {
				t.Fatal(err)
			}
			ino := func(rel string) uint64 {
				var st syscall.Stat_t
				if err := syscall.Lstat(filepath.Join(s.ours, rel), &st); err != nil {
					t.Fatal(err)
				}
				return st.Ino
			}
			if a, b, c := ino("new1"), ino("d/new2"), ino("old"); a != b || a != c {
				t.Errorf("inodes of new1, d/new2, old in the target: %d %d %d, want one file", a, b, c)
			}
			if b, _ := os.ReadFile(filepath.Join(s.ours, "old")); string(b) != "shared" {
				t.Errorf("old = %q", b)
			}
		})
	}
}
