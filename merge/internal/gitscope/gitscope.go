package gitscope

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/merge/internal/plan"
)

// workspaceSpecs limits every git command to the workspace minus tine's
// own files (anything named .tine-* at the root, and what is below it).
var workspaceSpecs = []string{"--", ".", ":(exclude,top,glob).tine-*", ":(exclude,top,glob).tine-*/**"}

// safeConfig keeps git from writing anything of the run's repository but our
// temporary index, and makes its output stable to parse.
var safeConfig = []string{
	"-c", "safe.directory=*",
	"-c", "core.quotePath=false",
	"-c", "core.fsmonitor=false",
	"-c", "core.untrackedCache=false",
	"-c", "core.splitIndex=false",
	"-c", "gc.auto=0",
	"-c", "maintenance.auto=false",
	"-c", "advice.addEmbeddedRepo=false",
	"-c", "apply.ignoreWhitespace=no",
}

// scratchConfig is added for the plan's commands, whose objects go to a
// private directory thrown away after the plan: stored uncompressed, never
// synced. Commands that write a user's repository (--commits) do without.
var scratchConfig = []string{"-c", "core.looseCompression=0", "-c", "core.fsync=none"}

// Git modes as they appear in a raw diff.
const (
	modeFile    = 0o100644
	modeExec    = 0o100755
	modeSymlink = 0o120000
	modeLink    = 0o160000 // a submodule or nested repository
)

// Options says what a git-scope merge compares.
type Options struct {
	Theirs string // the run's work tree
	Base   string // the fork point's files (the version the run was forked from)
	Head   string // the fork point's commit, HEAD of the run's repository then
	Ours   string // the target's work tree
	// Changed lists the paths where Theirs differs from Base (the run's
	// layer changes); only these are staged and compared, so the plan costs
	// what the run changed, not what the workspace holds.
	Changed []string
	// Scratch is an existing empty directory for the plan's staged content;
	// it must outlive the plan's Apply.
	Scratch string
}

// Plan plans a git-scope merge: the binary patch from the fork point's
// files to the run's work tree as git sees them — commits made since,
// staged and unstaged changes, deletions, untracked (not ignored) files,
// renames, mode changes, symlinks, binary files — checked against the
// target's working tree. The base is the fork point's files, not its
// commit, so work the source had not committed when it was forked is not
// taken for the run's. The content each entry writes is staged under
// o.Scratch; paths the patch cannot apply to are conflicts, each with git's
// reason. The entries are sorted by path.
//
// Neither Theirs nor Ours is written. A rename is planned as the deletion of
// its old path and the addition of its new one. A directory the run created
// that the target lacks is planned as an added directory (with the run's
// mode); a directory the run removed that the plan leaves empty in the
// target is deleted, as git does. A path where Ours already has exactly what
// Theirs has is converged rather than in conflict. A submodule or nested
// repository is a conflict: git scope cannot merge it. When Theirs is not
// the top of a git work tree or Head is not a commit there, Plan returns
// an error wrapping tine.ErrInvalid.
func Plan(ctx context.Context, o Options) (*plan.Plan, error) {
	g, err := open(ctx, o.Theirs, o.Head, o.Scratch)
	if err != nil {
		return nil, err
	}
	changes, err := g.changes(ctx, o.Base, o.Ours, o.Changed)
	if err != nil {
		return nil, err
	}
	p := &plan.Plan{Scope: "git", Entries: []plan.Entry{}}
	if len(changes) == 0 {
		return p, nil
	}
	m, err := newMerger(g, o.Base, o.Ours, changes)
	if err != nil {
		return nil, err
	}
	if p.Entries, err = m.plan(ctx); err != nil {
		return nil, err
	}
	if p.Entries, err = m.directories(p.Entries); err != nil {
		return nil, err
	}
	sort.SliceStable(p.Entries, func(i, j int) bool { return p.Entries[i].Path < p.Entries[j].Path })
	return p, nil
}

// cmdError is a git command that failed, with what it printed on stderr.
type cmdError struct {
	args   []string
	stderr string
	err    error
}

func (e *cmdError) Error() string {
	return fmt.Sprintf("git %s: %v: %s", strings.Join(e.args, " "), e.err, strings.TrimSpace(e.stderr))
}

func (e *cmdError) Unwrap() error { return e.err }

// run runs git with args in dir, for a plan, and returns its standard
// output.
func run(ctx context.Context, dir string, env []string, stdin []byte, args ...string) ([]byte, error) {
	return runWith(ctx, scratchConfig, dir, env, stdin, args...)
}

// runWith is run with extra configuration instead of the plan's.
func runWith(ctx context.Context, extra []string, dir string, env []string, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", slices.Concat(safeConfig, extra, args)...)
	cmd.Dir, cmd.Env = dir, env
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		short := args
		if len(short) > 3 {
			short = short[:3]
		}
		return stdout.Bytes(), &cmdError{args: short, stderr: stderr.String(), err: err}
	}
	return stdout.Bytes(), nil
}

// environ is the environment without anything that would point git at another
// repository, in the C locale (messages are parsed), plus extra.
func environ(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	env = append(env, "LC_ALL=C", "LANGUAGE=C")
	return append(env, extra...)
}

// repository is the run's repository, seen through a temporary index and object
// directory under scratch.
type repository struct {
	top     string // the work tree, theirs
	gitDir  string // the repository, absolute
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
	out, err := run(ctx, g.top, environ(), nil, "rev-parse", "--verify", "-q", head+"^{commit}")
	if err != nil {
		return nil, invalid(err)
	}
	g.head = strings.TrimSpace(string(out))
	return g, g.prepare(objects)
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
	out, err := run(ctx, g.top, environ(), nil, "rev-parse", "--show-toplevel", "--git-path", "objects", "--git-path", "index", "--absolute-git-dir")
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
	g.addEnv = environ("GIT_INDEX_FILE="+filepath.Join(g.scratch, "index"), "GIT_OBJECT_DIRECTORY="+dir)
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
	if err := copyFile(filepath.Join(g.scratch, "index"), baseIndex, 0o644); err != nil {
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
	env := environ("GIT_DIR="+g.gitDir, "GIT_WORK_TREE="+dir, "GIT_INDEX_FILE="+index,
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
	var ge *cmdError
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
// git's stat cache stays valid and racily-clean entries stay suspect), or
// reads head into a new one when the repository has no index.
func (g *repository) seedIndex(ctx context.Context) error {
	dst := filepath.Join(g.scratch, "index")
	err := copyFile(g.index, dst, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := run(ctx, g.top, g.env, nil, "read-tree", g.head); err != nil {
			return fmt.Errorf("merge: read the fork point: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("merge: copy the run's index: %w", err)
	}
	fi, err := os.Stat(g.index)
	if err != nil {
		return fmt.Errorf("merge: copy the run's index: %w", err)
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

// change is one entry of the raw diff and its sections of the patch (two
// for a type change, which git writes as a deletion and a creation).
type change struct {
	status           byte // A, C, D, M, R or T
	oldMode, newMode uint32
	oldID, newID     string
	oldPath, newPath string // equal but for renames and copies
	sections         [][]byte
	reason           string // why the change cannot be applied to ours
	direct           bool   // ours still has the fork point's version: the run's is taken as is
	quick            bool   // decided from the files, not by git (quickPlanner): direct, without sections
	bytes            int64  // with quick, the size of the run's version
}

// parseDiff parses the output of diff --patch-with-raw -z.
func parseDiff(out []byte) ([]*change, error) {
	var changes []*change
	for len(out) > 0 && out[0] == ':' {
		c, rest, err := parseRecord(out)
		if err != nil {
			return nil, err
		}
		changes, out = append(changes, c), rest
	}
	sections := splitPatch(bytes.TrimPrefix(out, []byte{0}))
	for _, c := range changes {
		n := 1
		if c.status == 'T' {
			n = 2
		}
		if len(sections) < n {
			return nil, errors.New("merge: git diff: fewer patch sections than changes")
		}
		c.sections, sections = sections[:n], sections[n:]
		for k := range c.sections {
			c.sections[k] = nameLines(c.sections[k], c.oldPath, c.newPath)
		}
	}
	if len(sections) != 0 {
		return nil, errors.New("merge: git diff: more patch sections than changes")
	}
	return changes, nil
}

// nameLines gives a patch section without ---/+++ lines (an empty file
// added or deleted, a mode change, a binary patch) those lines when its
// names hold a space: git apply cannot tell the two names of such a
// header apart ("diff --git a/x /y b/x /y") and refuses the whole patch.
// Quoted headers are unambiguous and left alone, as are sections that have
// the lines.
func nameLines(sec []byte, oldPath, newPath string) []byte {
	if !strings.Contains(oldPath+newPath, " ") || bytes.HasPrefix(sec, []byte(`diff --git "`)) {
		return sec
	}
	lines := bytes.SplitAfter(sec, []byte("\n"))
	at := len(lines)
	for i, l := range lines[1:] {
		if bytes.HasPrefix(l, []byte("--- ")) {
			return sec
		}
		if bytes.HasPrefix(l, []byte("@@")) || bytes.HasPrefix(l, []byte("GIT binary patch")) {
			at = i + 1
			break
		}
	}
	old, new := "a/"+oldPath+"\t", "b/"+newPath+"\t"
	header := string(bytes.Join(lines[:at], nil))
	if strings.Contains(header, "\nnew file mode ") {
		old = "/dev/null"
	}
	if strings.Contains(header, "\ndeleted file mode ") {
		new = "/dev/null"
	}
	names := []byte("--- " + old + "\n+++ " + new + "\n")
	return slices.Concat(bytes.Join(lines[:at], nil), names, bytes.Join(lines[at:], nil))
}

// parseRecord parses one raw record, ":old new oldid newid status\0path\0"
// with a second path for renames and copies.
func parseRecord(b []byte) (*change, []byte, error) {
	head, b, _ := bytes.Cut(b[1:], []byte{0})
	f := strings.Fields(string(head))
	if len(f) != 5 || f[4] == "" {
		return nil, nil, fmt.Errorf("merge: git diff: bad raw record %q", head)
	}
	c := &change{status: f[4][0], oldID: f[2], newID: f[3]}
	om, err1 := strconv.ParseUint(f[0], 8, 32)
	nm, err2 := strconv.ParseUint(f[1], 8, 32)
	if err := errors.Join(err1, err2); err != nil || !strings.ContainsRune("ACDMRT", rune(c.status)) {
		return nil, nil, fmt.Errorf("merge: git diff: bad raw record %q", head)
	}
	c.oldMode, c.newMode = uint32(om), uint32(nm)
	var p []byte
	p, b, _ = bytes.Cut(b, []byte{0})
	c.oldPath, c.newPath = string(p), string(p)
	if c.status == 'R' || c.status == 'C' {
		p, b, _ = bytes.Cut(b, []byte{0})
		c.newPath = string(p)
	}
	return c, b, nil
}

// splitPatch cuts a patch into its "diff --git" sections. No other line of
// a patch starts so: hunk lines start with a space, +, - or \, and the base85
// lines of a binary patch have no spaces.
func splitPatch(patch []byte) [][]byte {
	const header = "diff --git "
	var out [][]byte
	for len(patch) > 0 {
		next := bytes.Index(patch[1:], []byte("\n"+header))
		if next < 0 {
			return append(out, patch)
		}
		out, patch = append(out, patch[:next+2]), patch[next+2:]
	}
	return out
}

// paths returns the paths the change touches in the target.
func (c *change) paths() []string {
	if c.oldPath == c.newPath {
		return []string{c.newPath}
	}
	return []string{c.oldPath, c.newPath}
}

// side is what a change does to one path.
type side struct {
	path    string
	kind    layer.Kind
	mode    uint32 // the mode it gets, 0 when deleted
	oldMode uint32
	id      string // the blob it gets
}

// sides returns what the change does to each path, a rename being the
// deletion of its old path and the addition of its new one.
func (c *change) sides() []side {
	del := side{path: c.oldPath, kind: layer.Deleted, oldMode: c.oldMode}
	put := side{path: c.newPath, kind: layer.Modified, mode: c.newMode, oldMode: c.oldMode, id: c.newID}
	switch c.status {
	case 'D':
		return []side{del}
	case 'R':
		put.kind, put.oldMode = layer.Added, 0
		return []side{del, put}
	case 'A', 'C':
		put.kind, put.oldMode = layer.Added, 0
	case 'T':
		put.kind = layer.TypeChanged
	}
	return []side{put}
}

// typeOf names a git mode's type as plan.Entry.Type does.
func typeOf(mode uint32) string {
	switch mode {
	case modeFile, modeExec:
		return "file"
	case modeSymlink:
		return "symlink"
	}
	return "other"
}

// merger applies the changes to a mirror of ours under scratch/tree.
type merger struct {
	repo      *repository
	base      string // the fork point's files
	ours      string
	tree      string
	changes   []*change
	touched   map[string]bool // every path a change touches
	ancestors map[string]bool // every directory above a touched path
	oursDirs  map[string]bool // directories ours is known to have (addParents)
	shares    bool            // base and ours may show one file under one inode (plan.SharesInodes)
}

// newMerger prepares the mirror's directory and marks the changes git
// scope cannot merge (submodules and nested repositories).
func newMerger(g *repository, base, ours string, changes []*change) (*merger, error) {
	abs, err := filepath.Abs(ours)
	if err != nil {
		return nil, fmt.Errorf("merge: %s: %w", ours, err)
	}
	m := &merger{repo: g, base: base, ours: abs, tree: filepath.Join(g.scratch, "tree"), changes: changes,
		touched: map[string]bool{}, ancestors: map[string]bool{}, oursDirs: map[string]bool{},
		shares: plan.SharesInodes(plan.FSKind(base), plan.FSKind(abs))}
	for _, c := range changes {
		if c.oldMode == modeLink || c.newMode == modeLink {
			c.reason = "a submodule or nested git repository: git scope cannot merge it"
		}
		for _, p := range c.paths() {
			m.touched[p] = true
			for d := pathDir(p); d != ""; d = pathDir(d) {
				m.ancestors[d] = true
			}
		}
	}
	return m, os.Mkdir(m.tree, 0o755)
}

// pathDir is path.Dir of a slash-separated relative path, "" at the top.
func pathDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return ""
	}
	return p[:i]
}

// plan mirrors, checks and applies the changes, and returns the entries.
func (m *merger) plan(ctx context.Context) ([]plan.Entry, error) {
	if err := m.markDirect(ctx); err != nil {
		return nil, err
	}
	if err := m.mirror(); err != nil {
		return nil, err
	}
	// A change can apply only because one that fails now came before it (a
	// symlink that replaces a directory whose file's deletion conflicts):
	// check what is left until nothing more fails.
	for n := -1; n != len(m.live()); {
		n = len(m.live())
		if err := m.check(ctx); err != nil {
			return nil, err
		}
		if err := m.checkParents(); err != nil {
			return nil, err
		}
	}
	if patch, _ := joinSections(m.live()); len(patch) > 0 {
		if _, err := m.apply(ctx, patch); err != nil {
			return nil, fmt.Errorf("merge: apply the run's patch to the mirror: %w", err)
		}
	}
	var out []plan.Entry
	for _, c := range m.changes {
		for _, s := range c.sides() {
			e, err := m.entry(c, s)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// live returns the changes not known to fail that go through the mirror.
func (m *merger) live() []*change {
	var out []*change
	for _, c := range m.changes {
		if c.reason == "" && !c.direct {
			out = append(out, c)
		}
	}
	return out
}

// markDirect marks each change whose paths ours still has exactly as the
// fork point had them (the usual case: the target did not touch them): the
// patch applied there gives the run's version, so it is taken as is,
// without the mirror and git apply. A change stays on the patch path when
// another that does shares a path, a parent or a child with it (a file
// replaced by a directory, say), or when the run changed permission bits
// git does not see (the patch path keeps ours' there).
func (m *merger) markDirect(ctx context.Context) error {
	if m.base == "" {
		return nil
	}
	same := make([]bool, len(m.changes))
	err := plan.InParallel(ctx, len(m.changes), func(i int) (err error) {
		if m.changes[i].quick {
			same[i] = true // checked by quickPlanner
			return nil
		}
		same[i], err = m.untouchedByOurs(m.changes[i])
		return err
	})
	if err != nil {
		return err
	}
	for i, c := range m.changes {
		c.direct = same[i] && c.reason == ""
	}
	for changed := true; changed; {
		changed = false
		patched := map[string]bool{}
		for _, c := range m.changes {
			if !c.direct {
				for _, p := range c.paths() {
					for d := p; d != ""; d = pathDir(d) {
						patched[d] = true
					}
				}
			}
		}
		for _, c := range m.changes {
			if c.direct && m.nearPatched(c, patched) {
				if c.quick { // splitNear keeps this from happening
					return fmt.Errorf("merge: %s: decided without git, but near a change git applies", c.newPath)
				}
				c.direct, changed = false, true
			}
		}
	}
	return nil
}

// nearPatched reports whether a path of c, or a directory above one, is a
// path (or a directory above a path) of a change on the patch path.
func (m *merger) nearPatched(c *change, patched map[string]bool) bool {
	for _, p := range c.paths() {
		for d := p; d != ""; d = pathDir(d) {
			if patched[d] {
				return true
			}
		}
	}
	return false
}

// sameParents reports whether ours has what the fork point had above p:
// the same directories, down to where both stop having any.
func (m *merger) sameParents(p string) bool {
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		d := strings.Join(parts[:i], "/")
		bfi, berr := os.Lstat(m.at(m.base, d))
		ofi, oerr := os.Lstat(m.at(m.ours, d))
		switch {
		case berr != nil && oerr != nil:
			return errors.Is(berr, fs.ErrNotExist) && errors.Is(oerr, fs.ErrNotExist)
		case berr != nil || oerr != nil:
			return false
		case bfi.Mode().Type() != ofi.Mode().Type():
			return false
		case !bfi.IsDir():
			return true // a file on both sides: the change that replaces it says the rest
		}
	}
	return true
}

// untouchedByOurs reports whether ours has every path of c as the fork point
// had it (both absent, or the same type, permissions and content), and the
// run kept the permission bits of what it modified.
func (m *merger) untouchedByOurs(c *change) (bool, error) {
	for _, p := range c.paths() {
		if !m.sameParents(p) {
			return false, nil
		}
		bfi, berr := lstatUnder(m.base, p)
		ofi, oerr := lstatUnder(m.ours, p)
		switch {
		case errors.Is(berr, fs.ErrNotExist) && errors.Is(oerr, fs.ErrNotExist):
			continue
		case berr != nil || oerr != nil:
			if (berr == nil || errors.Is(berr, fs.ErrNotExist)) && (oerr == nil || errors.Is(oerr, fs.ErrNotExist)) {
				return false, nil
			}
			return false, errors.Join(berr, oerr)
		case bfi.IsDir() || ofi.IsDir():
			return false, nil
		}
		if !plan.SameInode(bfi, ofi, m.shares) {
			same, err := fstree.SamePath(m.at(m.base, p), m.at(m.ours, p))
			if err != nil || !same {
				return false, err
			}
		}
		if c.status == 'M' && c.oldMode == c.newMode {
			tfi, err := lstatUnder(m.repo.top, p)
			if err != nil || tfi.Mode().Perm() != bfi.Mode().Perm() {
				return false, nil
			}
		}
	}
	return true, nil
}

// joinSections returns the patch made of the changes' sections, and for each
// section the index of its change.
func joinSections(changes []*change) ([]byte, []int) {
	var patch []byte
	var owners []int
	for i, c := range changes {
		for _, s := range c.sections {
			patch = append(patch, s...)
			owners = append(owners, i)
		}
	}
	return patch, owners
}

// apply runs git apply in the mirror, outside any repository.
func (m *merger) apply(ctx context.Context, patch []byte, args ...string) ([]byte, error) {
	env := environ("GIT_CEILING_DIRECTORIES=" + m.repo.scratch)
	args = append([]string{"apply", "--binary", "--whitespace=nowarn"}, args...)
	return run(ctx, m.tree, env, patch, args...)
}

// mirror copies ours' version of every path a live change touches into the
// mirror: files and symbolic links as they are, a directory as itself with
// a placeholder for each entry no change touches, and a parent that is not a
// directory as a placeholder (or the same symbolic link) so that git apply
// meets what the target has in the way.
func (m *merger) mirror() error {
	for _, c := range m.live() {
		if reason, err := m.changedUnder(c); err != nil || reason != "" {
			c.reason = reason
			if err != nil {
				return fmt.Errorf("merge: %s: %w", c.oldPath, err)
			}
			continue
		}
		for _, p := range c.paths() {
			reason, err := m.mirrorPath(p)
			if err != nil {
				return fmt.Errorf("merge: mirror %s: %w", p, err)
			}
			if reason != "" && c.reason == "" {
				c.reason = reason
			}
		}
	}
	return nil
}

// changedUnder returns why change c, which deletes its path or changes its
// type, cannot be applied because ours changed that path's type or
// executable bit since the fork point (git apply checks neither for a
// deletion); "" when ours has the fork point's mode there, or nothing.
func (m *merger) changedUnder(c *change) (string, error) {
	if c.status != 'D' && c.status != 'T' {
		return "", nil
	}
	fi, err := lstatUnder(m.ours, c.oldPath)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if fi.IsDir() {
		return "", nil // mirrorPath judges directories
	}
	if mode := modeOf(fi); mode != c.oldMode {
		return fmt.Sprintf("%s: the target changed it since the fork point (mode %o, was %o)", c.oldPath, mode, c.oldMode), nil
	}
	return "", nil
}

// modeOf returns the mode git records for a file or symlink, 0 for
// anything else.
func modeOf(fi fs.FileInfo) uint32 {
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return modeSymlink
	case fi.Mode().IsRegular() && fi.Mode()&0o100 != 0:
		return modeExec
	case fi.Mode().IsRegular():
		return modeFile
	}
	return 0
}

// mirrorPath mirrors ours' rel, returning why it cannot be merged when ours
// has a file there that git cannot patch (a device, a fifo, a socket).
func (m *merger) mirrorPath(rel string) (string, error) {
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		dir := strings.Join(parts[:i], "/")
		fi, err := os.Lstat(m.at(m.ours, dir))
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		if !fi.IsDir() {
			return m.blocked(dir, fi)
		}
	}
	fi, err := os.Lstat(m.at(m.ours, rel))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return m.copyEntry(rel, fi)
}

// blocked handles ours' dir, a parent of a touched path that is not a
// directory in ours: fine when a change deletes or replaces it (git apply
// then meets it in the mirror), else the reason git scope cannot merge there.
func (m *merger) blocked(dir string, fi fs.FileInfo) (string, error) {
	if m.touched[dir] {
		return "", m.block(dir, fi.Mode()&fs.ModeSymlink != 0)
	}
	what := "a file"
	if fi.Mode()&fs.ModeSymlink != 0 {
		what = "a symbolic link"
	}
	return dir + ": the target has " + what + " there, where the run has a directory", nil
}

// at returns rel under root.
func (m *merger) at(root, rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }

// copyEntry copies ours' rel, of type fi, into the mirror.
func (m *merger) copyEntry(rel string, fi fs.FileInfo) (string, error) {
	dst := m.at(m.tree, rel)
	if fi.IsDir() {
		if names, err := plan.ReadDirNames(m.at(m.ours, rel)); err != nil || len(names) == 0 {
			return "", err // an empty directory: git sees nothing there, and apply removes it
		}
		if n, err := m.mirrorDir(rel); err != nil || n == 0 {
			return "", err
		}
		return rel + ": the target has a directory there, with files the run does not have", nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return "", err
	}
	switch {
	case fi.Mode().IsRegular():
		return "", copyFile(m.at(m.ours, rel), dst, fi.Mode().Perm())
	case fi.Mode()&fs.ModeSymlink != 0:
		return "", m.copyLink(rel, dst)
	}
	return rel + ": the target has a special file (" + fi.Mode().Type().String() + ") there", nil
}

// copyLink copies ours' symbolic link rel to dst.
func (m *merger) copyLink(rel, dst string) error {
	target, err := os.Readlink(m.at(m.ours, rel))
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return os.Symlink(target, dst)
}

// block puts in the mirror, at dir, what stands in the way in ours: the same
// symbolic link, or a placeholder file for anything else.
func (m *merger) block(dir string, link bool) error {
	dst := m.at(m.tree, dir)
	if _, err := os.Lstat(dst); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if link {
		return m.copyLink(dir, dst)
	}
	return os.WriteFile(dst, nil, 0o644)
}

// mirrorDir mirrors ours' directory rel: what no change touches inside it
// becomes a placeholder, so that git apply sees the directory is not empty.
// It returns how many placeholders it made.
func (m *merger) mirrorDir(rel string) (int, error) {
	if err := os.MkdirAll(m.at(m.tree, rel), 0o755); err != nil {
		return 0, err
	}
	ents, err := os.ReadDir(m.at(m.ours, rel))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range ents {
		child, k := rel+"/"+d.Name(), 0
		switch {
		case m.touched[child]:
		case m.ancestors[child] && d.IsDir():
			k, err = m.mirrorDir(child)
		default:
			k, err = 1, m.block(child, false)
		}
		if n += k; err != nil {
			return 0, err
		}
	}
	return n, nil
}

// check finds every change the patch cannot apply to the mirror, and marks
// it with git's reason.
func (m *merger) check(ctx context.Context) error {
	live := m.live()
	patch, owners := joinSections(live)
	if len(patch) == 0 {
		return nil
	}
	_, err := m.apply(ctx, patch, "--check", "-v")
	var ge *cmdError
	if err == nil || !errors.As(err, &ge) {
		return err
	}
	reasons, ok := checkReasons(ge.stderr, len(owners))
	if !ok {
		return m.checkEach(ctx, live)
	}
	found := false
	for i, r := range reasons {
		if r != "" {
			c := live[owners[i]]
			c.reason, found = joinReason(c.reason, r), true
		}
	}
	if !found {
		return m.checkEach(ctx, live)
	}
	return nil
}

// checkParents marks each live change that writes below a path the mirror
// has as a file or symlink that no live change removes: git apply --check
// lets such a patch pass, and then cannot write it.
func (m *merger) checkParents() error {
	removed := map[string]bool{}
	for _, c := range m.live() {
		if c.status == 'D' || c.status == 'T' {
			removed[c.oldPath] = true
		}
	}
	for _, c := range m.live() {
		if c.status == 'D' {
			continue
		}
		if reason, err := m.dirInTheWay(c.newPath, removed); err != nil || reason != "" {
			c.reason = reason
			if err != nil {
				return err
			}
			continue
		}
		for d := pathDir(c.newPath); d != ""; d = pathDir(d) {
			fi, err := os.Lstat(m.at(m.tree, d))
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || (err == nil && fi.IsDir()) {
				continue
			}
			if err != nil {
				return fmt.Errorf("merge: mirror %s: %w", d, err)
			}
			if !removed[d] {
				c.reason = d + ": the target has a file there, where the run has a directory"
				break
			}
		}
	}
	return nil
}

// dirInTheWay returns why a file cannot be written at rel: the mirror has a
// directory there holding files that no live change removes.
func (m *merger) dirInTheWay(rel string, removed map[string]bool) (string, error) {
	root := m.at(m.tree, rel)
	fi, err := os.Lstat(root)
	if err != nil || !fi.IsDir() {
		return "", nil
	}
	emptied := map[string]bool{} // directories the removals empty
	for p := range removed {
		for d := pathDir(p); d != ""; d = pathDir(d) {
			emptied[d] = true
		}
	}
	reason := ""
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		sub, err := filepath.Rel(m.tree, p)
		if err != nil {
			return err
		}
		sub = filepath.ToSlash(sub)
		switch {
		case d.IsDir() && !emptied[sub]:
			reason = rel + ": the target has a directory there, with a directory " + sub + " the run does not know"
		case !d.IsDir() && !removed[sub]:
			reason = rel + ": the target has a directory there, with files the run does not have"
		default:
			return nil
		}
		return filepath.SkipAll
	})
	return reason, err
}

// checkEach checks the changes one by one, each alone against the mirror:
// the fallback when git's verbose report cannot be split per section.
func (m *merger) checkEach(ctx context.Context, live []*change) error {
	found := false
	for _, c := range live {
		patch, _ := joinSections([]*change{c})
		_, err := m.apply(ctx, patch, "--check")
		var ge *cmdError
		if err != nil && !errors.As(err, &ge) {
			return err
		}
		if err != nil {
			c.reason, found = errorLines(ge.stderr), true
		}
	}
	if !found {
		return errors.New("merge: git apply --check failed but no change fails alone")
	}
	return nil
}

// checkReasons splits the report of git apply --check -v into the errors
// of each of its n sections; ok is false when the report does not have
// exactly n "Checking patch" blocks.
func checkReasons(stderr string, n int) (reasons []string, ok bool) {
	reasons = make([]string, n)
	i := -1
	for _, line := range strings.Split(stderr, "\n") {
		msg, isErr := strings.CutPrefix(line, "error: ")
		switch {
		case strings.HasPrefix(line, "Checking patch "):
			if i++; i >= n {
				return nil, false
			}
		case !isErr || msg == "while searching for:":
		case i < 0:
			return nil, false
		default:
			reasons[i] = joinReason(reasons[i], msg)
		}
	}
	return reasons, i == n-1
}

// errorLines returns git's error lines joined, or all it said when none.
func errorLines(stderr string) string {
	var out string
	for _, line := range strings.Split(stderr, "\n") {
		if msg, ok := strings.CutPrefix(line, "error: "); ok && msg != "while searching for:" {
			out = joinReason(out, msg)
		}
	}
	if out == "" {
		out = strings.TrimSpace(stderr)
	}
	return out
}

// joinReason appends reason r to a, separated by "; ".
func joinReason(a, r string) string {
	if a == "" {
		return r
	}
	return a + "; " + r
}

// entry returns the plan entry for side s of change c.
func (m *merger) entry(c *change, s side) (plan.Entry, error) {
	e := plan.Entry{Path: s.path, Action: plan.Take, Change: s.kind, Type: typeOf(s.mode)}
	if s.mode == 0 {
		e.Type = typeOf(s.oldMode)
	}
	if c.reason != "" {
		e.Action, e.Reason = plan.Conflict, c.reason
		same, err := m.converged(s)
		if err != nil || same {
			e.Action, e.Reason = plan.Converged, ""
		}
		return e, err
	}
	if s.mode == 0 {
		return e, nil
	}
	if c.direct {
		e.Source = m.at(m.repo.top, s.path)
		if c.quick {
			e.Bytes = c.bytes
			return e, nil
		}
		fi, err := os.Lstat(e.Source)
		if err != nil {
			return e, fmt.Errorf("merge: %w", err)
		}
		e.Bytes = layer.SizeOf(fi)
		return e, nil
	}
	e.Source = m.at(m.tree, s.path)
	var err error
	e.Bytes, err = m.finish(s, e.Source)
	return e, err
}

// converged reports whether ours already has what side s makes of its path.
func (m *merger) converged(s side) (bool, error) {
	fi, err := lstatUnder(m.ours, s.path)
	if errors.Is(err, fs.ErrNotExist) {
		return s.mode == 0, nil
	}
	if err == nil && s.mode == 0 && fi.IsDir() {
		return true, nil // git tracks files: a directory there means ours deleted the file too
	}
	if err != nil || s.mode == 0 {
		return false, err
	}
	var data []byte
	switch {
	case s.mode == modeSymlink && fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(m.at(m.ours, s.path))
		if err != nil {
			return false, err
		}
		data = []byte(target)
	case fi.Mode().IsRegular() && (s.mode == modeExec) == (fi.Mode()&0o100 != 0) && s.mode != modeSymlink:
		if data, err = os.ReadFile(m.at(m.ours, s.path)); err != nil {
			return false, err
		}
	default:
		return false, nil
	}
	return blobID(data, len(s.id)) == s.id, nil
}

// lstatUnder is os.Lstat of root's rel that follows no symbolic link: a
// path below anything but a directory does not exist.
func lstatUnder(root, rel string) (fs.FileInfo, error) {
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(strings.Join(parts[:i], "/"))))
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			return nil, fs.ErrNotExist
		}
	}
	return os.Lstat(filepath.Join(root, filepath.FromSlash(rel)))
}

// blobID returns the id git gives a blob of data, in SHA-256 when the id
// it is compared with has 64 hex digits, in SHA-1 otherwise.
func blobID(data []byte, hexLen int) string {
	h := sha1.New()
	if hexLen == 64 {
		h = sha256.New()
	}
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// finish gives the applied file at src its permissions and returns the
// bytes it will write.
func (m *merger) finish(s side, src string) (int64, error) {
	fi, err := os.Lstat(src)
	if err != nil {
		return 0, fmt.Errorf("merge: git apply left no %s: %w", s.path, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		return int64(len(target)), err
	}
	if err := os.Chmod(src, m.perm(s)); err != nil {
		return 0, fmt.Errorf("merge: %w", err)
	}
	return fi.Size(), nil
}

// perm returns the permissions a file written by side s gets, merged three
// ways as git merges modes: ours' when ours has the file and the run kept
// its mode (or ours has the run's executable bit already), else the run's
// file's, else git's defaults.
func (m *merger) perm(s side) fs.FileMode {
	exec := s.mode == modeExec
	if fi, err := lstatUnder(m.ours, s.path); err == nil && fi.Mode().IsRegular() {
		if s.oldMode == s.mode || (fi.Mode()&0o100 != 0) == exec {
			return fi.Mode().Perm()
		}
	}
	if fi, err := lstatUnder(m.repo.top, s.path); err == nil && fi.Mode().IsRegular() && (fi.Mode()&0o100 != 0) == exec {
		return fi.Mode().Perm()
	}
	if exec {
		return 0o755
	}
	return 0o644
}

// directories completes the entries with what git does not track but a
// merge must do to directories: a directory the run has above a path it
// writes, which ours lacks, is added (with the run's mode; it replaces what
// a deletion of the same path removes); a directory the run no longer has,
// which the plan empties in ours, is deleted.
func (m *merger) directories(entries []plan.Entry) ([]plan.Entry, error) {
	byPath := map[string]int{}
	for i, e := range entries {
		byPath[e.Path] = i
	}
	for i := 0; i < len(entries); i++ {
		e := entries[i]
		if e.Action != plan.Take || e.Source == "" {
			continue
		}
		var err error
		if entries, err = m.addParents(entries, byPath, e.Path); err != nil {
			return nil, err
		}
	}
	return m.removeEmptied(entries, byPath)
}

// addParents adds an entry for each directory above rel that ours lacks.
func (m *merger) addParents(entries []plan.Entry, byPath map[string]int, rel string) ([]plan.Entry, error) {
	var missing []string
	for d := pathDir(rel); d != ""; d = pathDir(d) {
		if i, ok := byPath[d]; ok && entries[i].Type == "dir" {
			break // planned already, and so are its parents
		}
		if m.oursDirs[d] {
			break
		}
		fi, err := lstatUnder(m.ours, d)
		if err == nil && fi.IsDir() {
			m.oursDirs[d] = true
			break
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		missing = append(missing, d)
	}
	for _, d := range missing {
		fi, err := os.Lstat(m.at(m.repo.top, d))
		if err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("merge: the run has no directory %s above %s: %w", d, rel, errors.Join(err, fs.ErrNotExist))
		}
		dirEntry := plan.Entry{Path: d, Action: plan.Take, Change: layer.Added, Type: "dir", Source: m.at(m.repo.top, d)}
		if i, ok := byPath[d]; ok { // ours has something else there, which the run deleted
			dirEntry.Change = layer.TypeChanged
			entries[i] = dirEntry
			continue
		}
		byPath[d] = len(entries)
		entries = append(entries, dirEntry)
	}
	return entries, nil
}

// removeEmptied adds the deletion of each directory the run no longer has
// once every entry ours has in it is deleted by the plan, deepest first.
func (m *merger) removeEmptied(entries []plan.Entry, byPath map[string]int) ([]plan.Entry, error) {
	deleted := map[string]bool{}
	cands := map[string]bool{}
	for _, e := range entries {
		if e.Action == plan.Take && e.Source == "" {
			deleted[e.Path] = true
			for d := pathDir(e.Path); d != ""; d = pathDir(d) {
				cands[d] = true
			}
		}
	}
	dirs := make([]string, 0, len(cands))
	for d := range cands {
		if _, planned := byPath[d]; !planned {
			dirs = append(dirs, d)
		}
	}
	sort.Slice(dirs, func(i, j int) bool { return strings.Count(dirs[i], "/") > strings.Count(dirs[j], "/") })
	for _, d := range dirs {
		empty, err := m.emptied(d, deleted)
		if err != nil {
			return nil, err
		}
		if !empty {
			continue
		}
		deleted[d] = true
		byPath[d] = len(entries)
		entries = append(entries, plan.Entry{Path: d, Action: plan.Take, Change: layer.Deleted, Type: "dir"})
	}
	return entries, nil
}

// emptied reports whether d is a directory in ours, not one in the run, all
// of whose entries are deleted.
func (m *merger) emptied(d string, deleted map[string]bool) (bool, error) {
	if fi, err := lstatUnder(m.repo.top, d); err == nil && fi.IsDir() {
		return false, nil
	}
	fi, err := lstatUnder(m.ours, d)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !fi.IsDir()) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	names, err := plan.ReadDirNames(m.at(m.ours, d))
	if err != nil {
		return false, err
	}
	for _, n := range names {
		if !deleted[d+"/"+n] {
			return false, nil
		}
	}
	return true, nil
}
