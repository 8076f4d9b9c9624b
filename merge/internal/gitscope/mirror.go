package gitscope

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/gitcmd"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/merge/internal/plan"
)

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
	env := gitcmd.Env("GIT_CEILING_DIRECTORIES=" + m.repo.scratch)
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
		n, empty, err := m.mirrorDir(rel)
		switch {
		case err != nil:
			return "", err
		case n > 0:
			return rel + ": the target has a directory there, with files the run does not have", nil
		case empty != "":
			return rel + ": the target has a directory there, with an empty directory " + empty, nil
		}
		return "", nil
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
// It returns how many placeholders it made, and an empty directory inside
// where a change touches a path: git sees nothing there, but applying the
// change to rel would remove it.
func (m *merger) mirrorDir(rel string) (n int, empty string, err error) {
	if err := os.MkdirAll(m.at(m.tree, rel), 0o755); err != nil {
		return 0, "", err
	}
	ents, err := os.ReadDir(m.at(m.ours, rel))
	if err != nil {
		return 0, "", err
	}
	for _, d := range ents {
		child, k, e := rel+"/"+d.Name(), 0, ""
		switch {
		case m.touched[child] && d.IsDir():
			e, err = m.emptyDir(child)
		case m.touched[child]:
		case m.ancestors[child] && d.IsDir():
			k, e, err = m.mirrorDir(child)
		default:
			k, err = 1, m.block(child, false)
		}
		if err != nil {
			return 0, "", err
		}
		if n += k; empty == "" {
			empty = e
		}
	}
	return n, empty, nil
}

// emptyDir returns rel when ours has an empty directory there, where a
// change touches a file git had.
func (m *merger) emptyDir(rel string) (string, error) {
	names, err := plan.ReadDirNames(m.at(m.ours, rel))
	if err != nil || len(names) > 0 {
		return "", err // a directory with entries: its own change conflicts
	}
	return rel, nil
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
	var ge *gitcmd.Error
	if err == nil || !errors.As(err, &ge) {
		return err
	}
	reasons, ok := checkReasons(ge.Stderr, len(owners))
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
		var ge *gitcmd.Error
		if err != nil && !errors.As(err, &ge) {
			return err
		}
		if err != nil {
			c.reason, found = errorLines(ge.Stderr), true
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
		// Read beneath the run's view when applied: the run may swap a
		// directory on the way for a symbolic link meanwhile.
		e.Source, e.SourceRoot = m.at(m.repo.top, s.path), m.repo.top
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
