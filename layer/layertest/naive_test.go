//go:build unix

package layertest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/layer/layertest"
)

// naive is a deliberately simple flat backend: every layer and every view
// is a whole copy. bug, when set, names a defect to plant (see mustFail).
type naive struct{ bug string }

var (
	_ layer.Backend  = (*naive)(nil)
	_ layer.Restorer = (*naive)(nil)
)

func (n *naive) Name() string { return "naive" }

func (n *naive) Import(_ context.Context, dir, l string, move bool) error {
	if !move && n.bug != "import-always-move" {
		return n.copier().copy(dir, l)
	}
	if err := os.Mkdir(l, 0o755); err != nil {
		return err
	}
	names, err := n.entries(dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(l, name)); err != nil {
			return err
		}
	}
	return nil
}

// entries lists the names in dir; the import-move-no-dotfiles bug misses
// dotfiles, as a shell's * does.
func (n *naive) entries(dir string) ([]string, error) {
	es, err := os.ReadDir(dir)
	var names []string
	for _, e := range es {
		if n.bug != "import-move-no-dotfiles" || !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	return names, err
}

func (n *naive) Activate(_ context.Context, r layer.Run, layers []string) error {
	if len(layers) != 1 {
		return fmt.Errorf("naive: a version of %d layers", len(layers))
	}
	if n.bug == "activate-mkdir" {
		if err := os.Mkdir(r.View, 0o755); err != nil {
			return err
		}
	}
	if err := os.Remove(r.View); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	c := n.copier()
	c.linkFiles = n.bug == "activate-links"
	return c.copy(layers[0], r.View)
}

func (n *naive) Seal(_ context.Context, r layer.Run, base []string, l string) ([]string, error) {
	c := n.copier()
	var err error
	switch n.bug {
	case "seal-returns-base":
		return base, c.copy(r.View, l)
	case "seal-copies-base":
		err = c.copy(base[0], l)
	case "seal-links":
		c.linkFiles = true
		err = c.copy(r.View, l)
	case "seal-no-delete":
		if err = c.copy(base[0], l); err == nil {
			err = mergeInto(r.View, l)
		}
	default:
		err = c.copy(r.View, l)
	}
	return []string{l}, err
}

func (n *naive) Changes(_ context.Context, r layer.Run, base []string) ([]layer.Change, error) {
	if n.bug == "changes-nil" {
		return nil, nil
	}
	return diff(base[0], r.View, n.bug)
}

func (n *naive) Deactivate(_ context.Context, r layer.Run) error {
	if n.bug == "deactivate-noop" {
		return nil
	}
	return n.removeAll(r.View)
}

// removeAll removes p, clearing chattr +i and +a in the way; the
// remove-blocked-by-flags bug does not.
func (n *naive) removeAll(p string) error {
	if n.bug == "remove-blocked-by-flags" {
		return os.RemoveAll(p)
	}
	return fstree.Purge(p)
}

func (n *naive) Read(_ context.Context, layers []string, scratch string) (string, func() error, error) {
	if n.bug == "read-scratch" {
		return scratch, func() error { return nil }, os.Mkdir(scratch, 0o755)
	}
	return layers[0], func() error { return nil }, nil
}

// Restore re-activates r when its view is missing; the restore-resets bug
// always does, losing the run's changes.
func (n *naive) Restore(ctx context.Context, r layer.Run, layers []string) error {
	if _, err := os.Lstat(r.View); err == nil && n.bug != "restore-resets" {
		return nil
	}
	if err := os.RemoveAll(r.View); err != nil {
		return err
	}
	return n.Activate(ctx, r, layers)
}

func (n *naive) RemoveLayer(_ context.Context, l string) error {
	if n.bug == "strict-remove" {
		if _, err := os.Lstat(l); err != nil {
			return err
		}
	}
	return n.removeAll(l)
}

// copier copies a tree; its flags plant the copy bugs.
type copier struct {
	bug       string
	linkFiles bool              // hard-link regular files instead of copying them
	depth     int               // directories entered below the top one
	inodes    map[uint64]string // first copy of each multiply linked inode
}

func (n *naive) copier() *copier { return &copier{bug: n.bug, inodes: map[uint64]string{}} }

// copy copies src to dst, which does not exist.
func (c *copier) copy(src, dst string) error {
	stat := os.Lstat
	if c.bug == "follow-symlinks" {
		stat = os.Stat
	}
	fi, err := stat(src)
	if err != nil {
		return err
	}
	perm := fi.Mode().Perm()
	if c.bug == "lossy-modes" {
		perm = 0o644
		if fi.IsDir() {
			perm = 0o755
		}
	}
	switch fi.Mode().Type() {
	case fs.ModeDir:
		return c.copyDir(src, dst, perm)
	case 0:
		return c.copyFile(src, dst, fi, perm)
	case fs.ModeSymlink:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	case fs.ModeNamedPipe:
		if c.bug == "no-special" {
			return nil
		}
		if err := syscall.Mkfifo(dst, 0o600); err != nil {
			return err
		}
		return os.Chmod(dst, perm)
	}
	return fmt.Errorf("naive: cannot copy %s (%v)", src, fi.Mode())
}

func (c *copier) copyDir(src, dst string, perm fs.FileMode) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	n := -1
	if c.bug == "readdir-once" {
		n = 1000
	}
	entries, err := f.ReadDir(n)
	f.Close()
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if len(entries) == 0 && c.bug == "skip-empty-dirs" && c.depth > 0 {
		return nil
	}
	if err := os.Mkdir(dst, 0o700); err != nil {
		return err
	}
	c.depth++
	defer func() { c.depth-- }()
	for _, e := range entries {
		if c.bug == "sanitize-names" && (strings.Contains(e.Name(), "\n") || strings.HasPrefix(e.Name(), "-")) {
			continue
		}
		if err := c.copy(filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())); err != nil {
			return err
		}
	}
	return os.Chmod(dst, perm)
}

func (c *copier) copyFile(src, dst string, fi fs.FileInfo, perm fs.FileMode) error {
	if fi.Size() == 0 && c.bug == "skip-empty" {
		return nil
	}
	if c.linkFiles {
		return os.Link(src, dst)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 && c.bug != "no-hardlinks" {
		if first, ok := c.inodes[uint64(st.Ino)]; ok {
			return os.Link(first, dst)
		}
		c.inodes[uint64(st.Ino)] = dst
	}
	if c.bug != "truncate-large" && c.bug != "dense-copy" {
		return c.copySparse(src, dst, fi, perm)
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	var r io.Reader = in
	if c.bug == "truncate-large" {
		r = io.LimitReader(in, 1<<20)
	}
	_, err = io.Copy(out, r)
	if err = errors.Join(err, out.Close()); err != nil {
		return err
	}
	if err := os.Chmod(dst, perm); err != nil {
		return err
	}
	return os.Chtimes(dst, fi.ModTime(), fi.ModTime())
}

// copySparse copies the regular file src to dst keeping its holes, with
// fstree.CopyContents; the dense-copy bug writes them out instead.
func (c *copier) copySparse(src, dst string, fi fs.FileInfo, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := errors.Join(fstree.CopyContents(out, in), out.Close()); err != nil {
		return err
	}
	if err := os.Chmod(dst, perm); err != nil {
		return err
	}
	return os.Chtimes(dst, fi.ModTime(), fi.ModTime())
}

// mergeInto copies src over dst without deleting what src lacks: the
// seal-no-delete bug.
func mergeInto(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		s, d := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		if di, err := os.Lstat(d); err == nil && di.IsDir() && e.IsDir() {
			if err := mergeInto(s, d); err != nil {
				return err
			}
			continue
		}
		if err := os.RemoveAll(d); err != nil {
			return err
		}
		if err := (&copier{inodes: map[uint64]string{}}).copy(s, d); err != nil {
			return err
		}
	}
	return nil
}

// diff lists where view differs from base; bug plants a Changes defect.
func diff(base, view, bug string) ([]layer.Change, error) {
	b, err := scan(base)
	if err != nil {
		return nil, err
	}
	v, err := scan(view)
	if err != nil {
		return nil, err
	}
	paths := slices.Sorted(func(yield func(string) bool) {
		for p := range b {
			yield(p)
		}
		for p := range v {
			if _, ok := b[p]; !ok {
				yield(p)
			}
		}
	})
	var out []layer.Change
	for _, p := range paths {
		bi, vi := b[p], v[p]
		c := layer.Change{Path: p}
		switch {
		case bug == "changes-everything":
			if vi == nil {
				continue
			}
			c.Kind, c.Type = layer.Modified, typeName(vi)
		case vi == nil:
			if bug == "changes-no-descend" && !isDir(v[path.Dir(p)]) && path.Dir(p) != "." {
				continue
			}
			c.Kind, c.Type, c.OldSize = layer.Deleted, typeName(bi), size(bi)
		case bi == nil:
			if bug == "changes-no-descend" && !isDir(b[path.Dir(p)]) && path.Dir(p) != "." {
				continue
			}
			c.Kind, c.Type, c.Size = layer.Added, typeName(vi), size(vi)
		case bi.Mode().Type() != vi.Mode().Type():
			c.Kind, c.Type, c.Size, c.OldSize = layer.TypeChanged, typeName(vi), size(vi), size(bi)
			if bug == "changes-no-typechange" {
				c.Kind = layer.Modified
			}
		default:
			same, err := sameEntry(filepath.Join(base, p), filepath.Join(view, p), bi, vi, bug)
			if err != nil || same {
				if err != nil {
					return nil, err
				}
				continue
			}
			c.Kind, c.Type, c.Size, c.OldSize = layer.Modified, typeName(vi), size(vi), size(bi)
		}
		out = append(out, c)
	}
	return out, nil
}

// scan maps the slash-separated paths under root to their Lstat info.
func scan(root string) (map[string]fs.FileInfo, error) {
	m := map[string]fs.FileInfo{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		m[filepath.ToSlash(rel)] = fi
		return err
	})
	return m, err
}

// sameEntry compares two entries of the same type: permission bits, then
// content or target.
func sameEntry(a, b string, ai, bi fs.FileInfo, bug string) (bool, error) {
	if ai.Mode().Perm() != bi.Mode().Perm() {
		return false, nil
	}
	switch ai.Mode().Type() {
	case 0:
		if bug == "changes-by-mtime" {
			return ai.Size() == bi.Size() && ai.ModTime().Equal(bi.ModTime()), nil
		}
		x, err := os.ReadFile(a)
		if err != nil {
			return false, err
		}
		y, err := os.ReadFile(b)
		return bytes.Equal(x, y), err
	case fs.ModeSymlink:
		x, err := os.Readlink(a)
		if err != nil {
			return false, err
		}
		y, err := os.Readlink(b)
		return x == y, err
	}
	return true, nil
}

func isDir(fi fs.FileInfo) bool { return fi != nil && fi.IsDir() }

func typeName(fi fs.FileInfo) string {
	switch fi.Mode().Type() {
	case 0:
		return "file"
	case fs.ModeDir:
		return "dir"
	case fs.ModeSymlink:
		return "symlink"
	}
	return "other"
}

func size(fi fs.FileInfo) int64 {
	if fi.Mode().IsRegular() {
		return fi.Size()
	}
	return 0
}

func TestNaive(t *testing.T) {
	layertest.Run(t, func(t *testing.T) layer.Backend { return &naive{} })
}

// TestBrokenBackend runs the suite against a naive backend with the bug
// named by $LAYERTEST_BROKEN; TestSuiteCatchesBrokenBackends runs it in a
// child process and expects failures.
func TestBrokenBackend(t *testing.T) {
	bug := os.Getenv("LAYERTEST_BROKEN")
	if bug == "" {
		t.Skip("run by TestSuiteCatchesBrokenBackends in a child process")
	}
	layertest.Run(t, func(t *testing.T) layer.Backend { return &naive{bug: bug} })
}

// mustFail maps each planted bug to cases that must fail because of it.
// Together they cover every case, so every case is shown able to fail.
var mustFail = map[string][]string{
	"seal-returns-base":       {"CreateFile", "Isolation", "NestedForks", "SealTwice"},
	"seal-copies-base":        {"CreateFile", "ModifyFile", "RecreateFile", "NestedForks", "SealTwice", "VersionReadBack"},
	"seal-links":              {"ParentChangesAfterSeal", "VersionReadBack"},
	"seal-no-delete":          {"DeleteFile", "DeleteDirTree", "RenameFile", "RenameDir", "RecreateFile", "RecreateDir"},
	"changes-nil":             {"Changes", "CreateFile", "ModifyFile", "DeleteFile", "FileToDir", "Fifo"},
	"changes-everything":      {"ChangesEmpty", "ChangesRestored"},
	"changes-by-mtime":        {"ChangesRestored"},
	"changes-no-descend":      {"Changes", "DeleteDirTree", "RenameDir"},
	"changes-no-typechange":   {"Changes", "FileToDir", "DirToFile"},
	"activate-links":          {"ImportCopy", "Isolation", "VersionReadBack"},
	"activate-mkdir":          {"ActivateEmptyViewDir"},
	"follow-symlinks":         {"Symlink"},
	"lossy-modes":             {"Chmod", "Permissions"},
	"no-hardlinks":            {"HardLink"},
	"truncate-large":          {"LargeFile"},
	"dense-copy":              {"SparseFile"},
	"remove-blocked-by-flags": {"PinnedFiles"},
	"readdir-once":            {"ManyFiles"},
	"sanitize-names":          {"UnusualNames"},
	"no-special":              {"Fifo"},
	"skip-empty":              {"EmptyFiles"},
	"skip-empty-dirs":         {"EmptyDir"},
	"deactivate-noop":         {"Deactivate", "DeactivateUnactivatedView"},
	"restore-resets":          {"Restore"},
	"read-scratch":            {"Read"},
	"strict-remove":           {"RemoveLayer"},
	"import-always-move":      {"ImportCopy"},
	"import-move-no-dotfiles": {"ImportMove"},
}

var failLine = regexp.MustCompile(`(?m)^\s*--- FAIL: TestBrokenBackend/(\S+)`)

// TestSuiteCatchesBrokenBackends keeps the suite honest: for each planted
// bug it runs the suite in a child process and checks that the expected
// cases fail, and that every case is caught by some bug.
func TestSuiteCatchesBrokenBackends(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per planted bug")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	caught := map[string]bool{}
	t.Run("bugs", func(t *testing.T) {
		for bug, want := range mustFail {
			t.Run(bug, func(t *testing.T) {
				t.Parallel()
				cmd := exec.Command(exe, "-test.run=^TestBrokenBackend$/^("+strings.Join(want, "|")+")$",
					"-test.v", "-test.count=1")
				cmd.Env = append(os.Environ(), "LAYERTEST_BROKEN="+bug)
				out, err := cmd.CombinedOutput()
				if err == nil {
					t.Errorf("the suite passed a backend with bug %s:\n%s", bug, out)
				}
				failed := map[string]bool{}
				for _, m := range failLine.FindAllSubmatch(out, -1) {
					failed[string(m[1])] = true
				}
				mu.Lock()
				defer mu.Unlock()
				for _, c := range want {
					if !failed[c] {
						t.Errorf("bug %s: case %s passed", bug, c)
					}
					caught[c] = caught[c] || failed[c]
				}
			})
		}
	})
	for _, c := range layertest.Cases() {
		if !caught[c] {
			t.Errorf("no planted bug makes case %s fail", c)
		}
	}
}
