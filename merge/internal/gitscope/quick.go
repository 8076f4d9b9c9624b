package gitscope

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/tinehq/tine/internal/gitcmd"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/merge/internal/plan"
)

// The quick path of the git scope. Staging a changed path in both temporary
// indexes hashes and stores both of its versions, which is most of what a
// git-scope plan costs. A path the target still has exactly as the fork
// point had it needs none of that: git would find the run's version taken as
// it is (a direct change). For such a path, when git would stage the bytes
// of the files as they are (no attributes, filters or end-of-line
// conversion, a plain index entry, no ignore rule, no nested repository, no
// name git treats specially), what git's diff says of it follows from the
// two files: added, deleted, type changed, or modified when the bytes or the
// executable bit differ, nothing otherwise. quickPlanner decides those paths
// from the files, in parallel, and leaves every other path to git; a quick
// path that git's changes come near (markDirect's rule) goes back to git.
// The plan is the one git alone would give.

// quickOff, set by tests, leaves every path to git.
var quickOff bool

// quick splits specs into the changes decided from the files and the
// paths left to git.
func (g *repository) quick(ctx context.Context, base, ours string, specs []string, idx *indexInfo) ([]*change, []string, error) {
	if base == "" || quickOff {
		return nil, specs, nil
	}
	ok, err := g.quickConfig(ctx)
	if err != nil || !ok {
		return nil, specs, err
	}
	for _, p := range specs {
		if n := path.Base(p); n == ".gitignore" || n == ".gitattributes" {
			return nil, specs, nil // the rules may differ between the two sides
		}
	}
	q := &quickPlanner{base: plan.NewView(base), theirs: plan.NewView(g.top), ours: plan.NewView(ours),
		gitDirs: map[string]bool{}}
	verdicts := make([]quickVerdict, len(specs))
	err = plan.InParallel(ctx, len(specs), func(i int) (err error) {
		verdicts[i], err = q.decide(specs[i], idx)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	var slow, asked []string
	for i, v := range verdicts {
		switch {
		case v.slow:
			slow = append(slow, specs[i])
		case v.change != nil:
			asked = append(asked, specs[i])
		}
	}
	plain, err := g.plainPaths(ctx, asked, idx)
	if err != nil {
		return nil, nil, err
	}
	var quick []*change
	for i, v := range verdicts {
		switch {
		case v.change == nil:
		case plain[specs[i]]:
			quick = append(quick, v.change)
		default:
			slow = append(slow, specs[i])
		}
	}
	return quick, slow, nil
}

// quickConfig reports whether the repository's configuration lets git stage
// files as they are: no end-of-line conversion, executable bits and
// symlinks recorded, names compared exactly, no sparse checkout.
func (g *repository) quickConfig(ctx context.Context) (bool, error) {
	out, err := run(ctx, g.top, g.env, nil, "config", "-z", "-l")
	if err != nil {
		return false, fmt.Errorf("merge: read the run's git configuration: %w", err)
	}
	want := map[string]bool{ // key → the boolean it must have when set
		"core.autocrlf": false, "core.filemode": true, "core.symlinks": true, "core.ignorecase": false,
		"core.sparsecheckout": false, "core.precomposeunicode": false,
	}
	for _, kv := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "\n")
		w, ok := want[strings.ToLower(k)]
		if !ok {
			continue
		}
		switch strings.ToLower(v) {
		case "true", "yes", "on", "1":
			ok = w
		case "false", "no", "off", "0":
			ok = !w
		default:
			ok = false
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

// plainPaths returns which of paths git stages as plain bytes: no attribute
// is set for them (check-attr), and the untracked ones are not ignored.
func (g *repository) plainPaths(ctx context.Context, paths []string, idx *indexInfo) (map[string]bool, error) {
	plain := map[string]bool{}
	if len(paths) == 0 {
		return plain, nil
	}
	env := gitcmd.Env("GIT_DIR="+g.shadow, "GIT_WORK_TREE="+g.top, "GIT_INDEX_FILE="+filepath.Join(g.scratch, "index"))
	var in bytes.Buffer
	for _, p := range paths {
		plain[p] = true
		in.WriteString(p + "\x00")
	}
	out, err := run(ctx, g.top, env, in.Bytes(), "check-attr", "-a", "-z", "--stdin")
	if err != nil {
		return nil, fmt.Errorf("merge: read the run's git attributes: %w", err)
	}
	f := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	for i := 0; i+2 < len(f); i += 3 { // path, attribute, value
		delete(plain, f[i])
	}
	var untracked []string
	for _, p := range paths {
		if !idx.files[p] && plain[p] {
			untracked = append(untracked, p)
		}
	}
	kept, err := g.notIgnored(ctx, g.top, env, untracked, nil)
	if err != nil {
		return nil, fmt.Errorf("merge: read the run's ignore rules: %w", err)
	}
	keep := map[string]bool{}
	for _, p := range kept {
		keep[p] = true
	}
	for _, p := range untracked {
		plain[p] = keep[p]
	}
	return plain, nil
}

// quickPlanner decides changed paths from the three trees.
type quickPlanner struct {
	base, theirs, ours *plan.View
	mu                 sync.Mutex
	gitDirs            map[string]bool // "root\x00dir" → dir holds .git
}

// quickVerdict is what quickPlanner made of one path: the change git would
// report (nil for none), or that git must see it (slow). A change is
// quick only once plainPaths agrees.
type quickVerdict struct {
	change *change
	slow   bool
}

// decide classifies path p.
func (q *quickPlanner) decide(p string, idx *indexInfo) (quickVerdict, error) {
	slow := quickVerdict{slow: true}
	if !plainName(p) || (idx.files[p] && idx.tags[p] != "H") {
		return slow, nil
	}
	for d := pathDir(p); d != ""; d = pathDir(d) {
		if idx.files[d] {
			return slow, nil // the index has a file where a side may have a directory
		}
	}
	bfi, bps, err := q.base.Lstat(p)
	if err != nil {
		return slow, err
	}
	tfi, tps, err := q.theirs.Lstat(p)
	if err != nil {
		return slow, err
	}
	ofi, ops, err := q.ours.Lstat(p)
	if err != nil {
		return slow, err
	}
	if !quickParents(bps, tps, ops) {
		return slow, nil
	}
	for _, v := range []*plan.View{q.base, q.theirs} {
		if nested, err := q.underRepo(v, p); err != nil || nested {
			return slow, err
		}
	}
	if isDirInfo(bfi) || isDirInfo(tfi) {
		if (bfi == nil || bfi.IsDir()) && (tfi == nil || tfi.IsDir()) {
			// A directory on both sides (or added, or removed): git tracks
			// its files, each a changed path of its own, unless it holds a
			// repository.
			if nested, err := q.holdsRepo(p, bfi, tfi); err != nil || nested {
				return slow, err
			}
			return quickVerdict{}, nil
		}
		return slow, nil
	}
	bm, tm := modeOfInfo(bfi), modeOfInfo(tfi)
	if bm == 0 && bfi != nil || tm == 0 && tfi != nil {
		return slow, nil // a device, fifo or socket
	}
	if same, err := q.oursIsBase(p, bfi, ofi); err != nil || !same {
		return slow, err
	}
	c := &change{oldMode: bm, newMode: tm, oldPath: p, newPath: p, direct: true, quick: true}
	if tfi != nil {
		c.bytes = layer.SizeOf(tfi)
	}
	switch {
	case bfi == nil && tfi == nil:
		return quickVerdict{}, nil
	case bfi == nil:
		c.status = 'A'
	case tfi == nil:
		c.status = 'D'
	case bm != tm && (bm == modeSymlink || tm == modeSymlink):
		c.status = 'T'
	default:
		c.status = 'M'
		if bm != tm {
			break // the executable bit changed: git reports it whatever the bytes
		}
		if plan.Perm(bfi) != plan.Perm(tfi) {
			return slow, nil // bits git does not see: the patch path keeps the target's
		}
		if same, err := plan.Same(p, bfi, tfi, q.base, q.theirs); err != nil || same {
			return quickVerdict{}, err
		}
	}
	return quickVerdict{change: c}, nil
}

// quickParents reports whether the parents of a path are plain directories
// on every side, or missing from the fork point and the target alike (a
// directory the run added), or missing from the run (a deletion).
func quickParents(base, theirs, ours plan.Parents) bool {
	switch {
	case theirs.Kind != plan.ParentIsDir && theirs.Kind != plan.ParentIsMissing:
		return false
	case base.Kind == plan.ParentIsDir:
		return ours.Kind == plan.ParentIsDir
	}
	return base.Kind == plan.ParentIsMissing && ours == base
}

// oursIsBase reports whether the target has path p as the fork point had
// it (both absent, or files or symlinks of the same signature), read only
// when the stats cannot tell.
func (q *quickPlanner) oursIsBase(p string, bfi, ofi fs.FileInfo) (bool, error) {
	switch {
	case bfi == nil || ofi == nil:
		return bfi == nil && ofi == nil, nil
	case ofi.IsDir():
		return false, nil
	}
	return plan.Same(p, bfi, ofi, q.base, q.ours)
}

// underRepo reports whether a directory above p holds a .git in view v (p
// is then inside a nested repository, which git stages as one link).
func (q *quickPlanner) underRepo(v *plan.View, p string) (bool, error) {
	for d := pathDir(p); d != ""; d = pathDir(d) {
		if nested, err := q.hasGit(v, d); err != nil || nested {
			return nested, err
		}
	}
	return false, nil
}

// holdsRepo reports whether directory p holds a .git on a side that has it.
func (q *quickPlanner) holdsRepo(p string, bfi, tfi fs.FileInfo) (bool, error) {
	for _, s := range []struct {
		v  *plan.View
		fi fs.FileInfo
	}{{q.base, bfi}, {q.theirs, tfi}} {
		if s.fi == nil {
			continue
		}
		if nested, err := q.hasGit(s.v, p); err != nil || nested {
			return nested, err
		}
	}
	return false, nil
}

// hasGit reports whether directory d of view v holds an entry named .git,
// cached per view and directory.
func (q *quickPlanner) hasGit(v *plan.View, d string) (bool, error) {
	key := v.Root() + "\x00" + d
	q.mu.Lock()
	has, ok := q.gitDirs[key]
	q.mu.Unlock()
	if ok {
		return has, nil
	}
	_, err := os.Lstat(filepath.Join(v.At(d), ".git"))
	switch {
	case err == nil:
		has = true
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
	default:
		return false, err
	}
	q.mu.Lock()
	q.gitDirs[key] = has
	q.mu.Unlock()
	return has, nil
}

// isDirInfo reports whether fi describes a directory.
func isDirInfo(fi fs.FileInfo) bool { return fi != nil && fi.IsDir() }

// modeOfInfo is modeOf, 0 for an absent path.
func modeOfInfo(fi fs.FileInfo) uint32 {
	if fi == nil {
		return 0
	}
	return modeOf(fi)
}

// plainName reports whether git stages every component of p under its
// name without a second look: none is .git-like (".git" in any case, or
// an NTFS short or trailing-dot form of it), holds a backslash, a colon or
// a tilde, or ends with a dot or a space.
func plainName(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if strings.HasPrefix(strings.ToLower(c), ".git") || strings.ContainsAny(c, "\\:~") ||
			strings.HasSuffix(c, ".") || strings.HasSuffix(c, " ") {
			return false
		}
	}
	return true
}

// splitNear returns the quick changes that no change of git's comes near
// (a path of one, or a directory above it, is a path of the other or a
// directory above it: markDirect's rule), and the paths of those that one
// does, which git must then see too.
func splitNear(quick, slow []*change) (far []*change, near []string) {
	if len(slow) == 0 {
		return quick, nil
	}
	patched := map[string]bool{}
	for _, c := range slow {
		for _, p := range c.paths() {
			for d := p; d != ""; d = pathDir(d) {
				patched[d] = true
			}
		}
	}
	for _, c := range quick {
		isNear := false
		for d := c.newPath; d != "" && !isNear; d = pathDir(d) {
			isNear = patched[d]
		}
		if isNear {
			near = append(near, c.newPath)
		} else {
			far = append(far, c)
		}
	}
	return far, near
}
