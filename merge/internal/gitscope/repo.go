package gitscope

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/gitcmd"
)

// repository is the run's repository, seen through a temporary index and object
// directory under scratch.
type repository struct {
	top     string // the work tree, theirs
	gitDir  string // the repository, absolute
	shadow  string // the private git directory git runs with (shadow.go)
	head    string // the fork point's commit, in full
	index   string // the repository's own index file
	scratch string
	env     []string // with the temporary index and object directory
	addEnv  []string // the same without the repository's objects
}

// open checks that theirs is the top of a git work tree where head is a
// commit, and prepares the temporary index and object directory.
func open(ctx context.Context, theirs, head, scratch string) (*repository, error) {
	invalid := func(err error) error {
		return fmt.Errorf("merge: %s: not a git workspace at the fork point (head %q): %w: %w", theirs, head, tine.ErrInvalid, err)
	}
	if head == "" || strings.HasPrefix(head, "-") {
		return nil, invalid(errors.New("no commit"))
	}
	g := &repository{}
	var err error
	if g.top, err = realPath(theirs); err != nil {
		return nil, invalid(err)
	}
	if g.scratch, err = realPath(scratch); err != nil {
		return nil, fmt.Errorf("merge: scratch: %w", err)
	}
	objects, err := g.locate(ctx)
	if err != nil {
		return nil, invalid(err)
	}
	g.shadow = filepath.Join(g.scratch, "git")
	if err := makeShadow(ctx, g.top, g.gitDir, g.shadow); err != nil {
		return nil, err
	}
	if err := g.prepare(objects); err != nil {
		return nil, err
	}
	out, err := run(ctx, g.top, g.env, nil, "rev-parse", "--verify", "-q", head+"^{commit}")
	if err != nil {
		return nil, invalid(err)
	}
	g.head = strings.TrimSpace(string(out))
	return g, nil
}

// realPath returns p absolute, with symbolic links resolved.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// locate finds the repository's index and object directory, and checks
// that g.top is the top of its work tree.
func (g *repository) locate(ctx context.Context) (objects string, err error) {
	out, err := run(ctx, g.top, gitcmd.Env(), nil, "rev-parse", "--show-toplevel", "--git-path", "objects", "--git-path", "index", "--absolute-git-dir")
	if err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 4 {
		return "", fmt.Errorf("git rev-parse: unexpected output %q", out)
	}
	if top, err := realPath(lines[0]); err != nil || top != g.top {
		return "", fmt.Errorf("not the top of the work tree %s", lines[0])
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(g.top, p)
	}
	g.index, g.gitDir = abs(lines[2]), lines[3]
	for _, p := range []string{g.gitDir, g.index, abs(lines[1])} {
		if _, err := beneath(g.top, p); err != nil {
			return "", err
		}
	}
	return abs(lines[1]), nil
}

// prepare makes the temporary object directory and the environments that
// use it: env reads the repository's objects as an alternate; addEnv, for
// git add, does not, because git "freshens" (touches) an object it would
// write when it finds it, even in an alternate.
func (g *repository) prepare(objects string) error {
	dir := filepath.Join(g.scratch, "objects")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("merge: scratch objects: %w", err)
	}
	g.addEnv = gitcmd.Env("GIT_DIR="+g.shadow, "GIT_WORK_TREE="+g.top,
		"GIT_INDEX_FILE="+filepath.Join(g.scratch, "index"), "GIT_OBJECT_DIRECTORY="+dir)
	g.env = append(g.addEnv[:len(g.addEnv):len(g.addEnv)], "GIT_ALTERNATE_OBJECT_DIRECTORIES="+quoteAlternate(objects))
	return nil
}

// quoteAlternate quotes a path for GIT_ALTERNATE_OBJECT_DIRECTORIES, a
// colon-separated list whose entries may be C-quoted.
func quoteAlternate(p string) string {
	if !strings.ContainsAny(p, ":\"\\") {
		return p
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(p) + `"`
}

// changes returns what the run changed at the changed paths, as git sees
// the fork point's files (base) and the run's work tree, each change with
// its sections of the patch. Paths the target (ours) still has as the fork
// point had them, which git would take as they are, are decided from the
// files (quickPlanner); git stages and diffs the others.
func (g *repository) changes(ctx context.Context, base, ours string, changed []string) ([]*change, error) {
	specs := changedSpecs(changed)
	if len(specs) == 0 {
		return nil, nil
	}
	if err := g.seedIndex(ctx); err != nil {
		return nil, err
	}
	idx, err := g.tracked(ctx)
	if err != nil {
		return nil, err
	}
	quick, slow, err := g.quick(ctx, base, ours, specs, idx)
	if err != nil {
		return nil, err
	}
	for {
		out, err := g.patch(ctx, base, slow, idx)
		if err != nil {
			return nil, err
		}
		var near []string
		if quick, near = splitNear(quick, out); len(near) == 0 {
			return append(out, quick...), nil
		}
		slow = append(slow, near...)
	}
}

// patch stages specs of the fork point's files (base) and of the run's work
// tree in two temporary indexes seeded alike, and returns what differs
// between them, each change with its sections of the patch.
func (g *repository) patch(ctx context.Context, base string, specs []string, idx *indexInfo) ([]*change, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	if err := g.seedIndex(ctx); err != nil {
		return nil, err
	}
	baseIndex := filepath.Join(g.scratch, "index-base")
	if err := copyIndex(filepath.Join(g.scratch, "index"), baseIndex); err != nil {
		return nil, fmt.Errorf("merge: seed the fork point's index: %w", err)
	}
	specs = trackedAncestors(specs, idx.files)
	if err := g.stage(ctx, base, baseIndex, specs, idx.all); err != nil {
		return nil, fmt.Errorf("merge: stage the fork point's files: %w", err)
	}
	// Without the repository's objects, as for git add: git would freshen
	// (touch) a tree it finds there rather than write it.
	out, err := run(ctx, g.top, withIndex(g.addEnv, baseIndex), nil, "write-tree", "--missing-ok")
	if err != nil {
		return nil, fmt.Errorf("merge: record the fork point's files: %w", err)
	}
	baseTree := strings.TrimSpace(string(out))
	if err := g.stage(ctx, g.top, filepath.Join(g.scratch, "index"), specs, idx.all); err != nil {
		return nil, fmt.Errorf("merge: stage the run's work tree: %w", err)
	}
	args := []string{"diff", "--cached", "--patch-with-raw", "-z", "--binary", "--full-index", "--no-abbrev",
		"--no-renames", "--no-ext-diff", "--no-textconv", "--no-color", "--submodule=short", "--no-relative",
		"--src-prefix=a/", "--dst-prefix=b/", baseTree}
	out, err = run(ctx, g.top, g.env, nil, append(args, workspaceSpecs...)...)
	if err != nil {
		return nil, fmt.Errorf("merge: diff the run against the fork point: %w", err)
	}
	return parseDiff(out)
}

// withIndex returns env with index as the index file.
func withIndex(env []string, index string) []string {
	env = append([]string(nil), env...)
	for i, kv := range env {
		if strings.HasPrefix(kv, "GIT_INDEX_FILE=") {
			env[i] = "GIT_INDEX_FILE=" + index
		}
	}
	return env
}

// changedSpecs turns changed paths into the paths to stage: tine's own
// files and the repository are left out, and a path inside a nested
// repository becomes the repository itself (which git stages as a link).
func changedSpecs(changed []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range changed {
		parts := strings.Split(p, "/")
		if strings.HasPrefix(parts[0], ".tine-") || parts[0] == ".git" {
			continue
		}
		for i, c := range parts {
			if c == ".git" {
				p = strings.Join(parts[:i], "/")
				break
			}
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// indexInfo is what the seeded index tracks.
type indexInfo struct {
	all   map[string]bool   // every path, and every directory above one
	files map[string]bool   // the paths alone
	tags  map[string]string // each path's ls-files -v tag ("H" for a plain cached entry)
}

// tracked returns what the seeded index tracks: every path and every
// directory above one (what a path to stage may name although neither side
// has it), and the paths alone, with their tags.
func (g *repository) tracked(ctx context.Context) (*indexInfo, error) {
	out, err := run(ctx, g.top, g.env, nil, "ls-files", "-z", "-v", "--cached", "--full-name")
	if err != nil {
		return nil, fmt.Errorf("merge: list the run's index: %w", err)
	}
	idx := &indexInfo{all: map[string]bool{}, files: map[string]bool{}, tags: map[string]string{}}
	for _, rec := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		tag, p, ok := strings.Cut(rec, " ")
		if !ok {
			continue
		}
		if _, dup := idx.tags[p]; dup {
			tag = "" // unmerged: several stages
		}
		idx.files[p], idx.tags[p] = true, tag
		for ; p != "" && !idx.all[p]; p = pathDir(p) {
			idx.all[p] = true
		}
	}
	return idx, nil
}

// trackedAncestors adds to specs every path of the index above one of
// them. Both indexes start as the run's, which may still hold a file where
// a side has a directory now (the source made it one before the fork):
// staging such a path on both sides keeps the stale entry out of the diff.
func trackedAncestors(specs []string, files map[string]bool) []string {
	seen := map[string]bool{}
	for _, p := range specs {
		seen[p] = true
	}
	for _, p := range specs {
		for d := pathDir(p); d != ""; d = pathDir(d) {
			if files[d] && !seen[d] {
				seen[d] = true
				specs = append(specs, d)
			}
		}
	}
	return specs
}

// stage brings index in line with the work tree at dir for the paths specs:
// each one that dir has or the index tracks, minus those git ignores, is
// staged with git add -A (new files added, deleted ones removed).
func (g *repository) stage(ctx context.Context, dir, index string, specs []string, tracked map[string]bool) error {
	var present []string
	seen, nested := map[string]bool{}, map[string]bool{}
	for _, p := range specs {
		p = stagePath(dir, p, nested)
		if _, err := lstatUnder(dir, p); (err == nil || tracked[p]) && !seen[p] {
			seen[p] = true
			present = append(present, p)
		}
	}
	env := gitcmd.Env("GIT_DIR="+g.shadow, "GIT_WORK_TREE="+dir, "GIT_INDEX_FILE="+index,
		"GIT_OBJECT_DIRECTORY="+filepath.Join(g.scratch, "objects"))
	present, err := g.notIgnored(ctx, dir, env, present, tracked)
	if err != nil || len(present) == 0 {
		return err
	}
	var list bytes.Buffer
	for _, p := range present {
		list.WriteString(":(top,literal)" + p + "\x00")
	}
	_, err = run(ctx, dir, env, list.Bytes(), "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul")
	return err
}

// stagePath returns what git must be given to stage p in the work tree
// at dir: the outermost path above p that is not a plain directory there (a
// nested repository, whose files git stages as one link, or a file or
// symlink that replaced a directory, beyond which git reads nothing), else
// p. stops caches what was found per directory.
func stagePath(dir, p string, stops map[string]bool) string {
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		d := strings.Join(parts[:i], "/")
		stop, ok := stops[d]
		if !ok {
			stop = stopsStaging(filepath.Join(dir, filepath.FromSlash(d)))
			stops[d] = stop
		}
		if stop {
			return d
		}
	}
	return p
}

// stopsStaging reports whether path d is there but not a plain
// directory: a file, a symlink, or a directory holding .git.
func stopsStaging(d string) bool {
	fi, err := os.Lstat(d)
	if err != nil {
		return false
	}
	if !fi.IsDir() {
		return true
	}
	_, err = os.Lstat(filepath.Join(d, ".git"))
	return err == nil
}

// notIgnored drops from paths those git ignores in the work tree at dir,
// keeping any the index tracks (or tracks something below).
func (g *repository) notIgnored(ctx context.Context, dir string, env, paths []string, tracked map[string]bool) ([]string, error) {
	var in bytes.Buffer
	for _, p := range paths {
		if !tracked[p] {
			in.WriteString(p + "\x00")
		}
	}
	if in.Len() == 0 {
		return paths, nil
	}
	out, err := run(ctx, dir, env, in.Bytes(), "check-ignore", "--stdin", "-z")
	var ge *gitcmd.Error
	var exit *exec.ExitError
	if errors.As(err, &ge) && errors.As(err, &exit) && exit.ExitCode() == 1 {
		return paths, nil // nothing is ignored
	}
	if err != nil {
		return nil, err
	}
	ignored := map[string]bool{}
	for _, p := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		ignored[p] = true
	}
	var kept []string
	for _, p := range paths {
		if !ignored[p] || tracked[p] {
			kept = append(kept, p)
		}
	}
	return kept, nil
}

// seedIndex copies the repository's index (keeping its modification time, so
// git's stat cache stays valid and racily-clean entries stay suspect), and
// the shared index a split one names, or reads head into a new one when the
// repository has no index.
func (g *repository) seedIndex(ctx context.Context) error {
	dst := filepath.Join(g.scratch, "index")
	rel, err := beneath(g.top, g.index)
	if err != nil {
		return err
	}
	fi, err := copyBeneath(g.top, rel, dst)
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := run(ctx, g.top, g.env, nil, "read-tree", g.head); err != nil {
			return fmt.Errorf("merge: read the fork point: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("merge: copy the run's index: %w", err)
	}
	if err := g.copySharedIndexes(); err != nil {
		return fmt.Errorf("merge: copy the run's shared index: %w", err)
	}
	return os.Chtimes(dst, fi.ModTime(), fi.ModTime())
}

// copySharedIndexes copies into the shadow repository the shared index
// files of a split index (sharedindex.ID beside the index), once.
func (g *repository) copySharedIndexes() error {
	ents, err := os.ReadDir(filepath.Dir(g.index))
	if err != nil {
		return err
	}
	for _, e := range ents {
		name := e.Name()
		dst := filepath.Join(g.shadow, name)
		if !strings.HasPrefix(name, "sharedindex.") {
			continue
		}
		if _, err := os.Lstat(dst); err == nil {
			continue
		}
		rel, err := beneath(g.top, filepath.Join(filepath.Dir(g.index), name))
		if err != nil {
			return err
		}
		if _, err := copyBeneath(g.top, rel, dst); err != nil {
			return err
		}
	}
	return nil
}

// copyIndex copies the index src to dst keeping its modification time, as
// seedIndex does: git takes an entry whose file is not older than the
// index for racily clean and compares its content. A copy made later hid
// that: a file edited after the commit, in the same clock tick and to the
// same size, was staged for the fork point with the commit's content, and
// the patch then carried an edit the target already had (a conflict in
// the differential harness, about one run in ten of its seed).
func copyIndex(src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if err := copyFile(src, dst, 0o644); err != nil {
		return err
	}
	return os.Chtimes(dst, fi.ModTime(), fi.ModTime())
}

// copyFile copies the regular file src to dst (replacing it) with perm.
func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, perm)
}
