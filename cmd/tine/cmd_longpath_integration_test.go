//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/layer"
	"golang.org/x/sys/unix"
)

// A fork can make a chain of directories whose full path is longer than
// PATH_MAX (4096 bytes), each name at most 255, one level at a time (cd,
// openat): no single system call takes such a path. These tests make one
// in a run's overlay view and check that every command that reads or
// moves the run's files carries it, or refuses up front.

// longNames are the names of the chain: 24 of 200 bytes, about 4.8 KB.
func longNames() []string {
	out := make([]string, 24)
	for i := range out {
		out[i] = fmt.Sprintf("d%02d", i) + strings.Repeat("x", 197)
	}
	return out
}

// longDir opens the chain below root one level at a time, making it when
// mk is set, and returns its deepest directory, open. No path longer than
// a name reaches the kernel, so it does not rely on the code under test.
func longDir(t *testing.T, root string, mk bool) (int, error) {
	t.Helper()
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, n := range longNames() {
		if mk {
			if err := unix.Mkdirat(fd, n, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				unix.Close(fd)
				return -1, err
			}
		}
		next, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}

// makeLong writes leaf.txt holding content at the bottom of a new chain
// below root (a run's view).
func makeLong(t *testing.T, root, content string) {
	t.Helper()
	fd, err := longDir(t, root, true)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	f, err := unix.Openat(fd, "leaf.txt", unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(f)
	if _, err := unix.Write(f, []byte(content)); err != nil {
		t.Fatal(err)
	}
}

// longLeaf returns the content of leaf.txt at the bottom of root's chain,
// or an error when root has none.
func longLeaf(t *testing.T, root string) (string, error) {
	t.Helper()
	fd, err := longDir(t, root, false)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	f, err := unix.Openat(fd, "leaf.txt", unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(f)
	b := make([]byte, 256)
	n, err := unix.Read(f, b)
	return string(b[:max(n, 0)]), err
}

// requireLeaf fails t unless root's chain ends in leaf.txt holding want.
func requireLeaf(t *testing.T, what, root, want string) {
	t.Helper()
	if got, err := longLeaf(t, root); err != nil || got != want {
		t.Fatalf("%s: the deep leaf.txt = %q, %v; want %q", what, got, err, want)
	}
}

// requireNoStaging fails t if dir holds a merge's or release's staging.
func requireNoStaging(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".tine-") {
			t.Errorf("%s left in %s", e.Name(), dir)
		}
	}
}

// longFork inits a workspace, forks it and makes the chain in the fork's
// view; it returns the environment and the workspace path.
func longFork(t *testing.T) (*env, string) {
	t.Helper()
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws := e.workspaceDir("app")
	writeTestFiles(t, ws, map[string]string{"README.md": "read me\n", "src/main.go": "package main\n"})
	e.ok("init", ws)
	e.ok("fork", "source")
	makeLong(t, e.path("source-1"), "deep\n")
	return e, ws
}

// TestCLI_LongPathDiff: tine diff lists a fork's files below a path
// longer than PATH_MAX (it failed with "file name too long"), exact in
// --json, and a hostile name down there is shown escaped like any other.
func TestCLI_LongPathDiff(t *testing.T) {
	e, _ := longFork(t)
	fd, err := longDir(t, e.path("source-1"), false)
	if err != nil {
		t.Fatal(err)
	}
	f, err := unix.Openat(fd, evilName, unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o644)
	unix.Close(fd)
	if err != nil {
		t.Fatal(err)
	}
	_, err = unix.Write(f, []byte("x\n"))
	unix.Close(f)
	if err != nil {
		t.Fatal(err)
	}
	var changes []layer.Change
	e.okJSON(&changes, "diff", "source-1", "--json")
	chain := strings.Join(longNames(), "/")
	got := map[string]layer.Kind{}
	for _, c := range changes {
		got[c.Path] = c.Kind
	}
	if len(changes) != len(longNames())+2 || got[chain+"/leaf.txt"] != layer.Added || got[chain+"/"+evilName] != layer.Added {
		t.Errorf("diff --json: %d changes; want the %d directories, leaf.txt and the hostile name, added", len(changes), len(longNames()))
	}
	out := e.ok("diff", "source-1")
	if n := strings.Count(out, "A  "); n != len(longNames())+2 {
		t.Errorf("diff shows %d added lines, want %d", n, len(longNames())+2)
	}
	requireEscaped(t, "tine diff", out, `evil\x1b[2K\rM  README.md"`)
	requireEscaped(t, "tine diff --patch", e.ok("diff", "source-1", "--patch"), `evil\x1b[2K\rM  README.md"`)
	requireEscaped(t, "tine merge --dry-run", e.ok("merge", "source-1", "--dry-run", "--verbose"), `evil\x1b[2K\rM  README.md"`)
}

// TestCLI_LongPathMergeFilesystem: merge --filesystem carries the deep
// file into the source.
func TestCLI_LongPathMergeFilesystem(t *testing.T) {
	e, ws := longFork(t)
	e.ok("merge", "source-1", "--filesystem")
	requireLeaf(t, "the source after the merge", ws, "deep\n")
	requireNoStaging(t, ws)
}

// TestCLI_LongPathMergePaths: merge --paths of the chain's top directory
// carries the deep file, and nothing else the fork changed.
func TestCLI_LongPathMergePaths(t *testing.T) {
	e, ws := longFork(t)
	if err := os.WriteFile(filepath.Join(e.path("source-1"), "other.txt"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.ok("merge", "source-1", "--paths", longNames()[0])
	requireLeaf(t, "the source after the merge", ws, "deep\n")
	if _, err := os.Lstat(filepath.Join(ws, "other.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("merge --paths took other.txt too: %v", err)
	}
	requireNoStaging(t, ws)
}

// TestCLI_LongPathMergeGit: git cannot open a path that long (it skips
// the directory with a warning), so a git-scope merge, which would leave
// the file out without a word, is refused up front with one line and
// exit status 7, nothing written; the filesystem scope then merges it.
func TestCLI_LongPathMergeGit(t *testing.T) {
	e, ws := gitWorkspace(t, map[string]string{"README.md": "read me\n"}, "", 1)
	makeLong(t, e.path("source-1"), "deep\n")
	r := e.tine("merge", "source-1")
	if r.code != exitUnsupported || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "too long for git") {
		t.Fatalf("git-scope merge of a long path: exit %d, stderr %.300q; want exit %d and one line", r.code, r.stderr, exitUnsupported)
	}
	if _, err := longLeaf(t, ws); err == nil {
		t.Error("the refused merge wrote the deep file")
	}
	requireNoStaging(t, ws)
	e.ok("merge", "source-1", "--filesystem")
	requireLeaf(t, "the source after the filesystem merge", ws, "deep\n")
}

// TestCLI_LongPathRelease: release turns a source holding the chain into
// plain files, both by applying its layers (rename) and by copying its
// view (a directory renamed from a lower layer forces the copy).
func TestCLI_LongPathRelease(t *testing.T) {
	for _, mode := range []string{"rename", "copy"} {
		t.Run(mode, func(t *testing.T) {
			testkit.RequireRoot(t, rootWhy)
			e := newEnv(t)
			ws := e.workspaceDir("app")
			writeTestFiles(t, ws, map[string]string{"README.md": "read me\n", "src/main.go": "package main\n"})
			e.ok("init", ws)
			if mode == "copy" {
				hostSh(t, ws, "mv src code")
			}
			makeLong(t, ws, "deep\n")
			e.ok("release", ws)
			requireLeaf(t, "the released workspace", ws, "deep\n")
			if _, err := os.Lstat(filepath.Join(ws, "README.md")); err != nil {
				t.Errorf("README.md after release: %v", err)
			}
			if mnt := hostSh(t, "/", "grep -c ' "+ws+" ' /proc/self/mountinfo || true"); strings.TrimSpace(mnt) != "0" {
				t.Errorf("%s still mounted after release", ws)
			}
			requireNoStaging(t, ws)
		})
	}
}

// TestCLI_LongPathFork: a fork of a run holding the chain (which seals
// the run's delta into a layer) holds it too.
func TestCLI_LongPathFork(t *testing.T) {
	e, _ := longFork(t)
	e.ok("fork", "source-1", "--name", "deeper")
	requireLeaf(t, "the fork of the fork", e.path("deeper"), "deep\n")
	requireLeaf(t, "the forked run", e.path("source-1"), "deep\n")
}

// TestCLI_LongPathPromoteRollback: promoting the fork puts the chain at
// the workspace path; rolling the source back to its old files removes
// it, and rolling forward again brings it back.
func TestCLI_LongPathPromoteRollback(t *testing.T) {
	e, ws := longFork(t)
	var p struct {
		Saved struct {
			ID string `json:"id"`
		} `json:"saved"`
	}
	e.okJSON(&p, "promote", "source-1", "--json")
	requireLeaf(t, "the workspace after promote", ws, "deep\n")
	var rb struct {
		Saved struct {
			ID string `json:"id"`
		} `json:"saved"`
	}
	e.okJSON(&rb, "rollback", "source", "--to", p.Saved.ID, "--json")
	if _, err := longLeaf(t, ws); err == nil {
		t.Error("the deep file is still there after rolling back to the old source's files")
	}
	if rb.Saved.ID == "" {
		t.Fatal("rollback --json names no saved version")
	}
	e.ok("rollback", "source", "--to", rb.Saved.ID)
	requireLeaf(t, "the workspace rolled forward", ws, "deep\n")
}
