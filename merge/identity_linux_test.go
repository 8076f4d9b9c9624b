package merge

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/merge/internal/plan"
)

// identitySides is a run that rewrote f (same size) over the fork point's
// files, and a target that is an overlay view over the fork point's own
// directory, as the engine mounts a source over its layer.
func identitySides(t *testing.T) testSides {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting an overlay view needs root")
	}
	s := makeSides(t, tree{"f": file("base"), "g": file("same")}, tree{"f": file("run!"), "g": file("same")}, tree{})
	view, err := overlayOver(t, s.base)
	if err != nil {
		t.Skipf("overlay mount not available here: %v", err)
	}
	s.ours = view
	return s
}

// TestPlanFiles_IdentityShortcut: a file the overlay target has not
// touched is the fork point's own inode (the plan takes it without reading
// it), and one rewritten in place with the same size and its old
// modification time put back is still seen as changed: the change time
// tells it apart.
func TestPlanFiles_IdentityShortcut(t *testing.T) {
	s := identitySides(t)
	statOf := func(p string) os.FileInfo {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	bf, of := filepath.Join(s.base, "f"), filepath.Join(s.ours, "f")
	across := plan.SharesInodes(plan.FSKind(s.base), plan.FSKind(s.ours))
	if !across || !plan.SameInode(statOf(bf), statOf(of), across) {
		t.Fatalf("an untouched lower file through the view is not recognised (across devices %v)", across)
	}
	changes, err := fstree.Diff(context.Background(), s.base, s.theirs)
	if err != nil {
		t.Fatal(err)
	}
	if p := planOf(t, s, changes); len(p.Entries) != 1 || p.Entries[0].Action != Take {
		t.Fatalf("untouched target: %+v, want f taken", p.Entries)
	}

	old := statOf(bf).ModTime()
	if err := os.WriteFile(of, []byte("ours"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(of, old, old); err != nil {
		t.Fatal(err)
	}
	if plan.SameInode(statOf(bf), statOf(of), across) {
		t.Fatal("a file rewritten in the target with its size and time kept passes as the fork point's")
	}
	if p := planOf(t, s, changes); len(p.Entries) != 1 || p.Entries[0].Action != Conflict {
		t.Fatalf("target rewrote f: %+v, want a conflict", p.Entries)
	}
}

// planOf plans s's changes in the filesystem scope.
func planOf(t *testing.T, s testSides, changes []layer.Change) *Plan {
	t.Helper()
	p, err := PlanFiles(context.Background(), s.base, s.theirs, s.ours, changes, PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
