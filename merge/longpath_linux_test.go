package merge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// longNames returns the names of a chain of directories whose path is
// about 4.6 KB, longer than PATH_MAX (4096): no single system call takes
// it, so a run makes it one level at a time (cd, openat).
func longNames() []string {
	out := make([]string, 23)
	for i := range out {
		out[i] = fmt.Sprintf("d%02d", i) + strings.Repeat("x", 197)
	}
	return out
}

// longDir opens, making it when mk is set, the chain of longNames below
// root one level at a time, and returns the deepest directory open. It
// passes no path longer than a name to the kernel, so it is independent of
// the code under test.
func longDir(t testing.TB, root string, mk bool) int {
	t.Helper()
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range longNames() {
		if mk {
			if err := unix.Mkdirat(fd, n, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				t.Fatal(err)
			}
		}
		next, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatalf("open %.3s... below %s: %v", n, root, err)
		}
		fd = next
	}
	return fd
}

// longFiles returns the files at the bottom of root's long chain, name to
// content, or nil when root has no chain.
func longFiles(t testing.TB, root string) map[string]string {
	t.Helper()
	if _, err := os.Lstat(filepath.Join(root, longNames()[0])); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	fd := longDir(t, root, false)
	dir := os.NewFile(uintptr(fd), "bottom")
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range names {
		f, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 256)
		k, err := unix.Read(f, b)
		unix.Close(f)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = string(b[:k])
	}
	return out
}

// writeLong writes files (name to content) at the bottom of root's long
// chain and removes the names given empty content.
func writeLong(t testing.TB, root string, files map[string]string) {
	t.Helper()
	fd := longDir(t, root, true)
	defer unix.Close(fd)
	for n, content := range files {
		if content == "" {
			if err := unix.Unlinkat(fd, n, 0); err != nil {
				t.Fatal(err)
			}
			continue
		}
		f, err := unix.Openat(fd, n, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		_, err = unix.Write(f, []byte(content))
		unix.Close(f)
		if err != nil {
			t.Fatal(err)
		}
	}
}

// longSides makes a merge whose run, below a path longer than PATH_MAX,
// changes a file (a replace), adds one, deletes one, and changes a file at
// the top; the target is a plain directory.
func longSides(t testing.TB) testSides {
	t.Helper()
	top := tree{"top.txt": file("old")}
	s := makeSides(t, top, tree{"top.txt": file("new")}, top)
	for _, d := range []string{s.base, s.ours, s.theirs} {
		writeLong(t, d, map[string]string{"keep.txt": "base", "gone.txt": "bye"})
	}
	writeLong(t, s.theirs, map[string]string{"keep.txt": "theirs", "new.txt": "added", "gone.txt": ""})
	return s
}

// longOverlaySides is longSides with the target an overlay view over the
// fork point's directory, as the engine mounts a source: the destinations
// it replaces and removes are restored, after a failure, from the lower
// layer's files, which the journal names by paths longer than PATH_MAX.
func longOverlaySides(t testing.TB) testSides {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting an overlay view needs root")
	}
	s := longSides(t)
	view, err := overlayOver(t, s.base)
	if err != nil {
		t.Skipf("overlay mount not available here: %v", err)
	}
	s.ours = view
	return s
}

// longBefore and longMerged are what the target of longSides holds before
// and after the merge.
var (
	longBefore = map[string]string{"keep.txt": "base", "gone.txt": "bye"}
	longMerged = map[string]string{"keep.txt": "theirs", "new.txt": "added"}
)

// checkLong fails t unless target holds want at the bottom of its long
// chain and top at the top, with no staging directory left.
func checkLong(t *testing.T, target string, want map[string]string, top string) {
	t.Helper()
	if got := longFiles(t, target); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("deep files = %v, want %v", got, want)
	}
	if b, err := os.ReadFile(filepath.Join(target, "top.txt")); err != nil || string(b) != top {
		t.Errorf("top.txt = %q, %v, want %q", b, err, top)
	}
	checkNoStaging(t, target)
}

// TestApply_LongPaths: a merge of changes below a path longer than
// PATH_MAX applies whole (it failed with "file name too long" while
// planning), and a SIGKILL at any of its steps is undone by Recover from
// the journal, which names those paths, or finished by it once committed.
func TestApply_LongPaths(t *testing.T) { testLongPaths(t, longSides, false) }

// TestApply_LongPathsOverlay is TestApply_LongPaths on an overlay view
// over the fork point, where the journal's undo of the deep replace and
// delete restores the lower layer's files.
func TestApply_LongPathsOverlay(t *testing.T) { testLongPaths(t, longOverlaySides, true) }

// testLongPaths applies the merge of sides made by mk, then kills it at
// each of its steps in turn and recovers; with restores, the journal must
// restore some destination from a lower layer's file at a long path.
func testLongPaths(t *testing.T, mk func(testing.TB) testSides, restores bool) {
	s := mk(t)
	j := journalPath(t)
	var steps []string
	longRestore := false
	applyHook = func(step string) error {
		steps = append(steps, step)
		if step == "journaled" {
			jr, err := readJournal(j)
			if err != nil {
				return err
			}
			for _, st := range jr.Steps {
				longRestore = longRestore || len(st.Restore) >= unix.PathMax
			}
		}
		return nil
	}
	err := Apply(context.Background(), planSides(t, s, PlanOptions{}), s.ours, j, ApplyOptions{})
	applyHook = nil
	if err != nil {
		t.Fatalf("Apply: %.300v", err)
	}
	if longRestore != restores {
		t.Fatalf("a journal step restores from a path longer than PATH_MAX: %v, want %v", longRestore, restores)
	}
	checkLong(t, s.ours, longMerged, "new")
	for i, step := range steps {
		kind, _, _ := strings.Cut(step, ":")
		t.Run(fmt.Sprintf("%02d_%s", i, kind), func(t *testing.T) {
			s := mk(t)
			j := journalPath(t)
			killedApply(t, s, j, i)
			if err := Recover(context.Background(), j, nil); err != nil {
				t.Fatalf("Recover: %.300v", err)
			}
			if step == "cleanup" {
				checkLong(t, s.ours, longMerged, "new")
			} else {
				checkLong(t, s.ours, longBefore, "old")
			}
			if _, err := os.Lstat(j); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("journal left behind: %v", err)
			}
		})
	}
}
